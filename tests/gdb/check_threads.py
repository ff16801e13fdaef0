# check_threads.py — run inside gdb (-x) on the `parked` program, live or
# from a core file, after weft-gdb.py was auto-loaded from libweft.  Checks
# that `info weft-threads` lists every UT of the manifest with the right
# state, object and holder; that a parked UT's frames become current with
# weft-thread (bt shows the call it parked in and the program function
# that called it, frame/up/down/info locals work); that `weft-thread apply
# all bt` reaches every UT.  Environment:
#   WEFT_TEST_MANIFEST  the program's stdout
#   WEFT_TEST_MODE      abort-core | live | gcore-core
#   WEFT_TEST_GCORE     (live) where to save a core with `gcore`
# Quits gdb with status 0 when every check passed, 1 otherwise.
import os
import re

import gdb

failures = []


def fail(msg):
    failures.append(msg)
    gdb.write('FAIL: %s\n' % msg)


def run(cmd):
    try:
        return gdb.execute(cmd, to_string=True)
    except gdb.error as e:
        fail('%s: %s' % (cmd, e))
        return ''


mode = os.environ['WEFT_TEST_MODE']
manifest = {}
for line in open(os.environ['WEFT_TEST_MANIFEST']):
    w = line.split()
    if w and w[0] == 'ut':
        manifest[w[1]] = dict(kind=w[2], obj=w[3], holder=w[4], function=w[5], call=w[6])

# ---- info weft-threads ----
out = run('info weft-threads')
rows = {}
for line in out.splitlines()[1:]:
    m = re.match(r'^([ *]) (\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(.*)$', line)
    if not m:
        fail('unparsed line: %r' % line)
        continue
    mark, uid, name, sched, vp, state = m.groups()
    if name in rows:
        fail('name %s listed twice' % name)
    rows[name] = dict(id=int(uid), sched=sched, vp=vp, state=state, current=mark == '*')

ids = {name: r['id'] for name, r in rows.items()}
if len(rows) != len(manifest):
    fail('%d UTs listed, %d in the manifest' % (len(rows), len(manifest)))


# WEFT_STACK_MODE=copy (make test-copy): every UT but main is copy-stack,
# listed with where its frames are; a parked one's frames are in its save
# area, which a live process shows in place and a core cannot
# (docs/debugging.md).
copy = os.environ.get('WEFT_STACK_MODE') == 'copy'
COPY_NOTE = re.compile(r' \[copy-stack: (?:(\d+) bytes saved|on its run stack)\]$')
saved = set()       # the UTs whose frames are in their save areas


def expect(name, pattern):
    r = rows.get(name)
    if r is None:
        fail('%s not listed' % name)
        return
    state = r['state']
    m = COPY_NOTE.search(state)
    if m:
        state = state[:m.start()]
        if m.group(1):
            saved.add(name)
    if copy and name != 'main' and not m:
        fail('%s: state %r does not say where its copy-stack frames are' % (name, r['state']))
    if not copy and m:
        fail('%s: state %r says copy-stack' % (name, r['state']))
    if not re.search(pattern, state):
        fail('%s: state %r does not match %r' % (name, state, pattern))


for name, u in manifest.items():
    obj = re.escape(u['obj'])
    holder = 'thread %d "%s"' % (ids.get(u['holder'], -1), u['holder'])
    kind = u['kind']
    if kind == 'sleep':
        expect(name, r'^blocked: sleep, deadline ')
    elif kind == 'join':
        expect(name, r'^blocked: join %s' % re.escape(holder))
    elif kind == 'mutex':
        expect(name, r'^blocked: mutex %s held by %s$' % (obj, re.escape(holder)))
    elif kind == 'cond':
        expect(name, r'^blocked: condition %s with mutex 0x[0-9a-f]+$' % obj)
    elif kind == 'sem':
        expect(name, r'^blocked: semaphore %s \(value 0\)$' % obj)
    elif kind == 'rwlock':
        expect(name, r'^blocked: rwlock %s held by writer %s$' % (obj, re.escape(holder)))
    elif kind == 'barrier':
        expect(name, r'^blocked: barrier %s \(14 of 1000 arrived\)$' % obj)
    elif kind == 'ready':
        expect(name, r'^ready$')
    r = rows.get(name)
    if r and (r['sched'] != 'other/0' or r['vp'] != '0'):
        fail('%s: sched %s vp %s, expected other/0 on VP 0' % (name, r['sched'], r['vp']))
if mode == 'abort-core':
    expect('main', r'^running on LWP \d+$')
    if not rows.get('main', {}).get('current'):
        fail('main (running) is not marked current')
else:
    expect('main', r'^blocked: join thread %d "holder" \(VP idle on LWP \d+\)$' % ids.get('holder', -1))


# ---- weft-thread N: frames, bt, frame, up, down, info locals ----
FRAME = re.compile(r'^#(\d+)\s+(?:0x[0-9a-f]+ in )?(<signal handler called>|[\w.]+)')


def frames(text):
    return [(int(m.group(1)), m.group(2)) for m in map(FRAME.match, text.splitlines()) if m]


def check_parked(name):
    u = manifest[name]
    if name in saved and mode != 'live':
        try:
            gdb.execute('weft-thread %d' % ids[name], to_string=True)
            fail('%s: a core showed frames that are in the save area' % name)
        except gdb.error as e:
            if 'a core file cannot show them in place' not in str(e):
                fail('%s: weft-thread said %r' % (name, str(e)))
        return
    sel = run('weft-thread %d' % ids[name])
    if not re.search(r'Switching to Weft thread %d "%s"' % (ids[name], re.escape(name)), sel):
        fail('%s: weft-thread said %r' % (name, sel))
    f = frames(sel)
    if not f or f[0][1] != u['function']:
        fail('%s: weft-thread selected %r, expected %s' % (name, f, u['function']))
    bt = frames(run('bt'))
    names = [n for _, n in bt]
    if not bt or bt[0][1] != '__weft_switch':
        fail('%s: bt starts with %r, expected __weft_switch' % (name, bt[:1]))
    if names and names[-1] != '__weft_entry':
        fail('%s: bt ends with %r, expected __weft_entry' % (name, names[-1]))
    if u['call'] == '-':
        # preempted: the trampoline's signal frame, then the function
        if '<signal handler called>' not in names or \
                names[names.index('<signal handler called>') + 1] != u['function']:
            fail('%s: bt %r lacks the preemption frame above %s' % (name, names, u['function']))
    else:
        pairs = list(zip(names, names[1:]))
        if (u['call'], u['function']) not in pairs:
            fail('%s: bt %r does not show %s called from %s' % (name, names, u['call'], u['function']))
    if name != 'spinner' and name != 'holder':
        loc = run('info locals')
        want = int(name.rsplit('-', 1)[1])
        if not re.search(r'^index = %d$' % want, loc, re.M):
            fail('%s: info locals says %r, expected index = %d' % (name, loc, want))
    if frames(run('frame'))[:1] != f[:1]:
        fail('%s: frame does not show the selected frame' % name)
    # up and down print through the user-selection observer, not to a
    # string: read where they went with `frame`.
    run('up')
    up = frames(run('frame'))
    i = names.index(u['function']) if u['function'] in names else -1
    if i < 0 or up[:1] != [bt[i + 1]]:
        fail('%s: up went to %r' % (name, up))
    run('down')
    run('down')
    down = frames(run('frame'))
    if i <= 0 or down[:1] != [bt[i - 1]]:
        fail('%s: down went to %r' % (name, down))


for kind in ('sleep', 'join', 'mutex', 'cond', 'sem', 'rwlock', 'barrier'):
    check_parked('%s-03' % kind)
check_parked('holder')
check_parked('spinner')

# back to the real frames
run('weft-thread current')
bt = frames(run('bt 1'))
if not bt or bt[0][0] != 0:
    fail('weft-thread current: bt starts with %r' % bt)

# ---- weft-thread apply all bt ----
out = run('weft-thread apply all bt')
headers = re.findall(r'^Weft thread (\d+) "([^"]+)"', out, re.M)
if sorted(n for _, n in headers) != sorted(rows):
    fail('weft-thread apply all bt visited %d UTs, expected %d' % (len(headers), len(manifest)))
if 'corrupt stack' in out or 'Cannot access memory' in out:
    fail('weft-thread apply all bt hit an unreadable stack')
entries = out.count('__weft_entry ()')
shown = len(manifest) - 1 - (len(saved) if mode != 'live' else 0)
if entries != shown:
    fail('%d backtraces end at __weft_entry, expected %d' % (entries, shown))
if copy and mode != 'live' and out.count('a core file cannot show them in place') != len(saved):
    fail('weft-thread apply all bt: %d UTs said their frames are in the save area, expected %d'
         % (out.count('a core file cannot show them in place'), len(saved)))

# ---- a core with the stacks in it ----
if mode == 'live':
    path = os.environ['WEFT_TEST_GCORE']
    out = run('gcore %s' % path)
    if not re.search(r'weft: added \d+ KiB of thread stacks', out):
        fail('gcore did not add the stacks: %r' % out)

gdb.write('%d failures\n' % len(failures))
gdb.execute('kill' if mode == 'live' else 'echo')
gdb.execute('quit %d' % (1 if failures else 0))
