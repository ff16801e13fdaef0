# weft-gdb.py - gdb support for Weft's user threads (UTs).
#
# Loaded by gdb with libweft: the library carries this file in its
# .debug_gdb_scripts section (tools/gdb/debug_gdb_scripts.S), and
# `make install` also puts it where gdb's auto-load path looks for
# libweft.so's scripts.  It adds:
#
#   info weft-threads [ID...]   every UT: id, name, state, policy and
#                               priority, its VP, and what it waits on (the
#                               object and its kind, a mutex's owner, a
#                               sleep's deadline)
#   weft-thread [ID|current]    make a UT's frames current: bt, frame, up,
#                               down and info locals then work on it
#   weft-thread apply all|ID... COMMAND
#                               run COMMAND on each of those UTs
#   weft-gcore [FILE]           gcore, with the UTs' stacks in the core
#                               (also installed as `gcore`)
#
# on a live process and on a core file alike.
#
# How it reads the runtime.  Everything comes from the runtime's own tables
# by name, through the debug information of the object that defines them
# (libweft.so, or the program libweft.a was linked into): the UT table
# (`chunks` and `nslots` in runtime/ut_table.c), `__weft_vps`, `__weft_proc`,
# `__weft_started`, and the fields of struct ut, struct vp and the sync
# objects, looked up by name, so layouts may change under it.  Enum names
# (states, wait kinds) come from the debug information too: a new wait kind
# shows up by its name.  Nothing here is written into the inferior.
#
# How a parked UT's frames become current.  A UT that is not running was
# suspended by __weft_switch (runtime/arch switch.S), which pushed its
# callee-saved registers and return address and stored the stack pointer
# in ut->sp.  A frame unwinder, active only while a UT is selected, takes
# the kernel thread's innermost real frame and says that its caller is
# __weft_switch at the point just after those pushes, with the UT's saved
# stack pointer: gdb's own CFI for __weft_switch then recovers the UT's
# registers and unwinds the rest of its stack, through the preemption
# trampoline (a signal frame) for a preempted UT, down to __weft_entry.  A
# frame filter hides the kernel thread's real frames from `bt` meanwhile.
# The registers of the inferior are never changed, so this works on core
# files, and `continue` or `weft-thread current` simply drops the view.

import array
import os
import re
import struct
import time

import gdb
import gdb.unwinder

try:
    from gdb.unwinder import FrameId as _FrameId  # gdb >= 14
except ImportError:
    class _FrameId(object):
        def __init__(self, sp, pc):
            self.sp = sp
            self.pc = pc


class WeftError(gdb.GdbError):
    pass


# ---------------------------------------------------------------------------
# The runtime's tables


def _field_offset(t, path):
    """Byte offset and type of a field `a.b.c` of struct type t."""
    off = 0
    for name in path.split('.'):
        t = t.strip_typedefs()
        for f in t.fields():
            if f.name == name:
                off += f.bitpos // 8
                t = f.type
                break
        else:
            return None, None
    return off, t


def _enum_names(enum_type, prefix):
    names = {}
    for f in enum_type.strip_typedefs().fields():
        n = f.name
        if n.startswith(prefix):
            n = n[len(prefix):]
        names[int(f.enumval)] = n.lower()
    return names


class UT(object):
    """One UT, as read from the table: plain Python values."""

    __slots__ = ('addr', 'id', 'name', 'state', 'policy', 'prio', 'wait_kind',
                 'wait_obj', 'tindex', 'deadline', 'sp', 'stack_lo', 'stack_hi',
                 'slot', 'gen', 'vp', 'copy', 'cs_save', 'cs_len')

    def value(self, rt):
        return gdb.Value(self.addr).cast(rt.ut_ptr).dereference()


class Runtime(object):
    """Weft's runtime in the current inferior: where its tables are and how
    they are laid out.  Made afresh when objfiles change."""

    def __init__(self):
        self.chunks_sym = None
        for sym in gdb.lookup_static_symbols('chunks'):
            fn = sym.symtab.filename if sym.symtab else ''
            if fn.endswith('ut_table.c'):
                self.chunks_sym = sym
                break
        if self.chunks_sym is None:
            raise WeftError(self._why_not_found())
        self.objfile = self.chunks_sym.symtab.objfile
        self.block = self.chunks_sym.symtab.static_block()

        def static(name):
            for cand in gdb.lookup_static_symbols(name):
                if cand.symtab and cand.symtab.filename == self.chunks_sym.symtab.filename:
                    return cand
            raise WeftError('no %s in %s' % (name, self.chunks_sym.symtab.filename))

        def global_(name):
            s = self.objfile.lookup_global_symbol(name)
            if s is None:
                raise WeftError('%s has no debug information for %s; was it built with -g?'
                                % (self.objfile.filename, name))
            return s

        self.nslots_sym = static('nslots')
        self.vps_sym = global_('__weft_vps')
        self.proc_sym = global_('__weft_proc')
        self.started_sym = global_('__weft_started')
        self.ut_ptr = self.chunks_sym.type.strip_typedefs().target()
        self.ut_type = self.ut_ptr.target().strip_typedefs()
        self.ut_size = self.ut_type.sizeof
        self.fields = {}
        for name in ('id', 'name', 'state', 'policy', 'prio', 'wait_kind', 'wait_obj',
                     'tindex', 'deadline', 'sp', 'stack.lo', 'stack.hi', 'slot', 'gen', 'vp',
                     'stack.kind', 'cs'):
            off, t = _field_offset(self.ut_type, name)
            if off is not None:
                self.fields[name] = (off, t.strip_typedefs().sizeof, t)
        for need in ('id', 'state', 'sp'):
            if need not in self.fields:
                raise WeftError('struct ut has no field %r: this script does not match the library' % need)
        self.state_names = _enum_names(self._type('enum ut_state'), 'UT_')
        self.wait_names = _enum_names(self._type('enum wait_kind'), 'WAIT_')
        self.states = {v: k for k, v in self.state_names.items()}
        try:
            kinds = self._type('enum stack_kind')
            ct = self._type('struct ut_copy')
            self.cs_save = _field_offset(ct, 'save')[0]
            self.cs_len = _field_offset(ct, 'len')[0]
        except gdb.error:
            kinds = None
        self.stack_copy = ({v: k for k, v in _enum_names(kinds, 'STACK_').items()}.get('copy')
                           if kinds is not None else None)
        self.waits = {v: k for k, v in self.wait_names.items()}
        self.text = self._text_range()
        self._switch_pc = None
        self._types = {}
        self.names = {}     # UT address -> 'thread N "name"', for one command

    def _type(self, name):
        try:
            return gdb.lookup_type(name, self.block)
        except gdb.error:
            return gdb.lookup_type(name)

    def type_or_none(self, name):
        if name not in self._types:
            try:
                self._types[name] = self._type(name)
            except gdb.error:
                self._types[name] = None
        return self._types[name]

    @staticmethod
    def _why_not_found():
        for o in gdb.objfiles():
            base = os.path.basename(o.filename or '')
            if base.startswith('libweft.so'):
                return ('%s has no debug information (built without -g, or stripped): '
                        'Weft\'s threads cannot be read' % o.filename)
        try:
            gdb.parse_and_eval('(long)&__weft_vps')
            return ('this program contains Weft but not its debug information '
                    '(libweft.a built without -g, or the program was stripped)')
        except gdb.error:
            pass
        return 'no Weft runtime in this program (libweft is not loaded yet, or not used)'

    def _text_range(self):
        try:
            lo = int(gdb.parse_and_eval('(unsigned long)&__weft_text_begin'))
            hi = int(gdb.parse_and_eval('(unsigned long)&__weft_text_end'))
            if lo < hi:
                return (lo, hi)
        except gdb.error:
            pass
        return None

    def in_weft(self, pc):
        if self.text:
            return self.text[0] <= pc < self.text[1]
        name = gdb.solib_name(pc) or ''
        return os.path.basename(name).startswith('libweft.so')

    def started(self):
        return bool(self.started_sym.value())

    def switch_pc(self):
        """The PC inside __weft_switch after it has pushed the outgoing UT's
        frame and stored its stack pointer: where a suspended UT stands.
        Found as the instruction that loads the incoming stack pointer, so
        __weft_switch's own CFI describes the frame there."""
        if self._switch_pc is None:
            start = int(gdb.parse_and_eval('(unsigned long)&__weft_switch'))
            arch = gdb.selected_inferior().architecture()
            pc = None
            for ins in arch.disassemble(start, count=64):
                asm = ins['asm'].replace(' ', '')
                if re.search(r'mov[a-z]*%r[a-z0-9]+,%rsp$', asm):
                    pc = ins['addr']
                    break
                if asm.startswith('ret'):
                    break
            if pc is None:
                raise WeftError('cannot find the switch point in __weft_switch')
            self._switch_pc = pc
        return self._switch_pc

    # -- VPs ----------------------------------------------------------------

    def vps(self):
        """[(index, vp Value)] for every VP."""
        vps = self.vps_sym.value()
        n = 1
        try:
            n = int(self.proc_sym.value()['nvps'])
        except gdb.error:
            pass
        cap = vps.type.strip_typedefs().range()[1] + 1
        n = max(1, min(n, cap))
        return [(i, vps[i]) for i in range(n)]

    def running(self):
        """{UT address: (vp index, kernel thread id)} for each VP's cur."""
        cur = {}
        for i, vp in self.vps():
            p = int(vp['cur'])
            if p:
                tid = 0
                try:
                    tid = int(vp['tid'])
                except gdb.error:
                    pass
                cur[p] = (i, tid)
        return cur

    # -- the UT table -------------------------------------------------------

    def uts(self):
        """Every UT that is not FREE, in slot order."""
        nslots = int(self.nslots_sym.value())
        chunks = self.chunks_sym.value()
        nchunks = chunks.type.strip_typedefs().range()[1] + 1
        ptrs = []
        for c in range(nchunks):
            p = int(chunks[c])
            if not p:
                break
            ptrs.append(p)
        if not ptrs or not nslots:
            return []
        per = nslots // len(ptrs)
        free = self.states.get('free', 0)
        inf = gdb.selected_inferior()
        running = self.running()
        soff, ssz, _ = self.fields['state']
        out = []
        for base in ptrs:
            try:
                mem = bytes(inf.read_memory(base, per * self.ut_size))
            except gdb.MemoryError:
                raise WeftError('cannot read the thread table at 0x%x (a core without it?)' % base)
            for i in range(per):
                o = i * self.ut_size
                if mem[o + soff] == free:
                    continue
                out.append(self._decode(base + o, mem[o:o + self.ut_size], running))
        return out

    def _get(self, raw, name, signed=False):
        f = self.fields.get(name)
        if f is None:
            return None
        off, size, _ = f
        return int.from_bytes(raw[off:off + size], 'little', signed=signed)

    def _decode(self, addr, raw, running):
        u = UT()
        u.addr = addr
        u.id = self._get(raw, 'id')
        off, size, _ = self.fields.get('name', (None, 0, None))
        u.name = (raw[off:off + size].split(b'\0', 1)[0].decode('utf-8', 'replace')
                  if off is not None else '')
        u.state = self._get(raw, 'state')
        u.policy = self._get(raw, 'policy') or 0
        u.prio = self._get(raw, 'prio') or 0
        u.wait_kind = self._get(raw, 'wait_kind') or 0
        u.wait_obj = self._get(raw, 'wait_obj') or 0
        u.tindex = self._get(raw, 'tindex') or 0
        u.deadline = self._get(raw, 'deadline', signed=True) or 0
        u.sp = self._get(raw, 'sp') or 0
        u.stack_lo = self._get(raw, 'stack.lo') or 0
        u.stack_hi = self._get(raw, 'stack.hi') or 0
        u.slot = self._get(raw, 'slot')
        u.gen = self._get(raw, 'gen')
        # a copy-stack UT (runtime/copystack.c): its frames may be in its
        # save area, [cs.save, cs.save + cs.len) standing for the top
        # cs.len bytes of its run stack
        u.copy = self.stack_copy is not None and self._get(raw, 'stack.kind') == self.stack_copy
        u.cs_save = u.cs_len = 0
        cs = self._get(raw, 'cs') if u.copy else 0
        if cs:
            try:
                m = bytes(gdb.selected_inferior().read_memory(cs, max(self.cs_save, self.cs_len) + 8))
                u.cs_save = int.from_bytes(m[self.cs_save:self.cs_save + 8], 'little')
                u.cs_len = int.from_bytes(m[self.cs_len:self.cs_len + 4], 'little')
            except gdb.MemoryError:
                pass
        if addr in running:
            u.vp = running[addr][0]
        elif 'vp' in self.fields:
            u.vp = self._vp_index(self._get(raw, 'vp'))
        else:
            u.vp = 0          # M:1: the one VP
        return u

    def _vp_index(self, v):
        """A UT's own VP field (M:N): a struct vp pointer or an index."""
        t = self.fields['vp'][2].strip_typedefs()
        if t.code != gdb.TYPE_CODE_PTR:
            return v
        if not v:
            return None
        base = int(self.vps_sym.value().address)
        size = self.vps_sym.type.strip_typedefs().target().sizeof
        return (v - base) // size

    def state_name(self, u):
        return self.state_names.get(u.state, 'state %d' % u.state)

    def find(self, ut_id):
        for u in self.uts():
            if u.id == ut_id:
                return u
        raise WeftError('no Weft thread %d (see "info weft-threads")' % ut_id)


_runtime = None


def runtime(require_started=True):
    global _runtime
    if gdb.selected_inferior().pid == 0 and not _has_core():
        raise WeftError('no process or core file')
    if _runtime is None:
        _runtime = Runtime()
    if require_started and not _runtime.started():
        raise WeftError("Weft's runtime has not started yet in this process (no thread table)")
    _runtime.names = {}     # memory may have changed since the last command
    return _runtime


def _forget_runtime(*args):
    global _runtime
    _runtime = None
    _deselect()


def _has_core():
    try:
        conn = gdb.selected_inferior().connection
        return conn is not None and conn.type == 'core'
    except AttributeError:
        return 'core' in gdb.execute('info target', to_string=True)


def _is_live():
    inf = gdb.selected_inferior()
    if inf.pid == 0:
        return False
    try:
        conn = inf.connection
        return conn is not None and conn.type == 'native'
    except AttributeError:
        return not _has_core()


# ---------------------------------------------------------------------------
# Descriptions


def _thread_ref(rt, addr):
    ref = rt.names.get(addr)
    if ref is None:
        try:
            t = gdb.Value(addr).cast(rt.ut_ptr).dereference()
            name = t['name'].string(length=16).split('\0', 1)[0] if 'name' in rt.fields else ''
            ref = 'thread %d "%s"' % (int(t['id']), name)
        except (gdb.error, gdb.MemoryError):
            ref = 'thread at 0x%x' % addr
        rt.names[addr] = ref
    return ref


def _obj(rt, type_name, addr):
    t = rt.type_or_none(type_name)
    if t is None or not addr:
        return None
    try:
        v = gdb.Value(addr).cast(t.pointer()).dereference()
        v.fetch_lazy()
        return v
    except (gdb.error, gdb.MemoryError):
        return None


def _secs(ns):
    return '%.3f s' % (ns / 1e9)


def _deadline(rt, u):
    if not u.tindex:
        return ''
    if _is_live():
        now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        left = u.deadline - now
        if left >= 0:
            return ', deadline in ' + _secs(left)
        return ', deadline passed ' + _secs(-left) + ' ago'
    return ', deadline at %s (CLOCK_MONOTONIC)' % _secs(u.deadline)


def describe_wait(rt, u):
    """What a BLOCKED UT waits on, in words."""
    kind = rt.wait_names.get(u.wait_kind, 'kind %d' % u.wait_kind)
    a = u.wait_obj
    try:
        if kind == 'join':
            s = 'join %s' % _thread_ref(rt, a) if a else 'join'
        elif kind == 'sleep':
            s = 'sleep'
        elif kind == 'mutex':
            s = 'mutex 0x%x' % a
            m = _obj(rt, 'struct wmutex', a)
            if m is not None:
                owner = int(m['owner'])
                s += ' held by %s' % _thread_ref(rt, owner) if owner else ' (unlocked)'
        elif kind == 'cond':
            s = 'condition 0x%x' % a
            c = _obj(rt, 'struct wcond', a)
            if c is not None and int(c['mutex']):
                s += ' with mutex 0x%x' % int(c['mutex'])
        elif kind == 'rwlock':
            s = 'rwlock 0x%x' % a
            r = _obj(rt, 'struct wrwlock', a)
            if r is not None:
                if int(r['writer']):
                    s += ' held by writer %s' % _thread_ref(rt, int(r['writer']))
                elif int(r['nreaders']):
                    s += ' held by %d reader(s)' % int(r['nreaders'])
        elif kind == 'sem':
            s = 'semaphore 0x%x' % a
            v = _obj(rt, 'struct wsem', a)
            if v is not None:
                s += ' (value %d)' % int(v['value'])
        elif kind == 'barrier':
            s = 'barrier 0x%x' % a
            b = _obj(rt, 'struct wbarrier', a)
            if b is not None:
                s += ' (%d of %d arrived)' % (int(b['arrived']), int(b['count']))
        elif kind == 'futex':
            w = _obj(rt, 'struct fwait', a)
            s = 'futex 0x%x' % int(w['addr']) if w is not None else 'futex (wait record 0x%x)' % a
        elif kind == 'mailbox':
            s = 'a message in its mailbox'
        elif kind == 'pause':
            s = 'a signal (pause)'
        else:
            s = kind + (' 0x%x' % a if a else '')
    except (gdb.error, gdb.MemoryError):
        s = kind + (' 0x%x' % a if a else '')
    return s + _deadline(rt, u)


_POLICIES = {0: 'other', 1: 'fifo', 2: 'rr', 3: 'batch', 5: 'idle'}


def describe(rt, u, running=None):
    st = rt.state_name(u)
    if running is None:
        running = rt.running()
    if u.addr in running:
        vp, tid = running[u.addr]
        where = 'on LWP %d' % tid if tid else 'on VP %d' % vp
        if st == 'blocked':
            # the VP found nothing to run: it waits in the kernel on this UT's stack
            return '%s: %s (VP idle %s)' % (st, describe_wait(rt, u), where)
        return '%s %s' % (st, where)
    copy = ''
    if u.copy:
        copy = (' [copy-stack: %d bytes saved]' % u.cs_len if u.cs_len
                else ' [copy-stack: on its run stack]')
    if st == 'blocked':
        return '%s: %s%s' % (st, describe_wait(rt, u), copy)
    if st == 'deferred':
        return 'ready, waiting for its run stack%s' % copy
    return st + copy


# ---------------------------------------------------------------------------
# Selecting a UT: the unwinder and the frame filter


class _Selection(object):
    def __init__(self, ut, thread, real_pc, real_sp, switch_pc):
        self.ut = ut
        self.thread_key = (thread.inferior.num, thread.ptid)
        self.real_pc = real_pc
        self.real_sp = real_sp
        self.switch_pc = switch_pc
        self.claimed_level = None


_sel = None


def _thread_key():
    t = gdb.selected_thread()
    return (t.inferior.num, t.ptid) if t else None


_past_main = None   # the user's `backtrace past-main`, while a UT is selected


def _set_past_main(on):
    gdb.execute('set backtrace past-main %s' % ('on' if on else 'off'), to_string=True)


# A parked copy-stack UT's frames put back on its run stack for the
# selection (live processes only): (address, the bytes that were there).
_swapped = None


def _swap_in(u):
    """Put u's saved frames where they belong, keeping what was there."""
    global _swapped
    _hook_detach()
    inf = gdb.selected_inferior()
    at = u.stack_hi - u.cs_len
    keep = bytes(inf.read_memory(at, u.cs_len))
    inf.write_memory(at, bytes(inf.read_memory(u.cs_save, u.cs_len)))
    _swapped = (at, keep)


def _swap_out():
    """Give the run stack back its bytes: before the program runs again,
    before gdb detaches or exits, and when another UT is selected."""
    global _swapped
    if _swapped is not None:
        at, keep = _swapped
        _swapped = None
        try:
            gdb.selected_inferior().write_memory(at, keep)
        except (gdb.error, gdb.MemoryError):
            pass


def _deselect(*args):
    global _sel, _past_main
    _swap_out()
    if _sel is not None:
        _sel = None
        try:
            if _past_main is not None:
                _set_past_main(_past_main)
            gdb.invalidate_cached_frames()
        except gdb.error:
            pass
        _past_main = None


class WeftUnwinder(gdb.unwinder.Unwinder):
    """While a UT is selected: the kernel thread's innermost real frame
    (the outermost of an inline chain) is made to return into __weft_switch
    on the UT's stack."""

    def __init__(self):
        super(WeftUnwinder, self).__init__('weft-thread')

    def __call__(self, pf):
        sel = _sel
        if sel is None or sel.claimed_level is not None and pf.level() != sel.claimed_level:
            return None
        if _thread_key() != sel.thread_key:
            return None
        pc = pf.read_register('rip')
        sp = pf.read_register('rsp')
        if int(pc) != sel.real_pc or int(sp) != sel.real_sp:
            return None
        sel.claimed_level = pf.level()
        # This frame's id sits at the UT's stack pointer, below the frames
        # that follow, so gdb's "stack goes the right way" check holds.
        ui = pf.create_unwind_info(_FrameId(gdb.Value(sel.ut.sp).cast(sp.type), pc))
        ui.add_saved_register('rip', gdb.Value(sel.switch_pc).cast(pc.type))
        ui.add_saved_register('rsp', gdb.Value(sel.ut.sp).cast(sp.type))
        return ui


class WeftFrameFilter(object):
    """While a UT is selected, `bt` shows only its frames."""

    def __init__(self):
        self.name = 'weft-thread'
        self.priority = 100
        self.enabled = True

    def filter(self, frames):
        sel = _sel
        if sel is None or _thread_key() != sel.thread_key:
            return frames
        return (f for f in frames if sel.claimed_level is None
                or f.inferior_frame().level() > sel.claimed_level)


def _ut_frames(limit=256):
    """The selected UT's frames, innermost first: those above the real frame
    the unwinder claimed (it claims it when gdb first unwinds past it)."""
    seen = []
    f = gdb.newest_frame()
    while f is not None and len(seen) < limit:
        seen.append(f)
        if _sel.claimed_level is None and f.level() >= 64:
            break
        try:
            f = f.older()
        except gdb.error:
            break
    if _sel.claimed_level is None:
        return []
    return [f for f in seen if f.level() > _sel.claimed_level]


def select_ut(rt, u):
    """Make u's frames current; returns the frame selected."""
    global _sel
    running = rt.running()
    _deselect()
    if u.addr in running:
        vp, tid = running[u.addr]
        if tid:
            for t in gdb.selected_inferior().threads():
                if t.ptid[1] == tid and t.ptid != gdb.selected_thread().ptid:
                    t.switch()
                    break
        f = gdb.newest_frame()
        f.select()
        return f
    st = rt.state_name(u)
    if st not in ('ready', 'blocked', 'deferred') or not u.sp:
        raise WeftError('Weft thread %d is %s: it has no stack to show' % (u.id, st))
    if u.stack_lo and u.stack_hi and not (u.stack_lo <= u.sp < u.stack_hi):
        raise WeftError('Weft thread %d: saved stack pointer 0x%x is outside its stack [0x%x, 0x%x)'
                        % (u.id, u.sp, u.stack_lo, u.stack_hi))
    if u.copy and u.cs_len:
        # its frames are in its save area: another UT's are on the run
        # stack.  A live process gets them back in place while the UT is
        # selected (_swap_out undoes it); a core cannot be written.
        if not _is_live():
            raise WeftError('Weft thread %d is copy-stack and its %d bytes of frames are in its save '
                            'area at 0x%x, not on its run stack: a core file cannot show them in '
                            'place (the live process can, and so does the thread dump, '
                            'WEFT_DUMP_SIGNAL)' % (u.id, u.cs_len, u.cs_save))
        _swap_in(u)
    thread = gdb.selected_thread()
    f0 = gdb.newest_frame()
    sel = _Selection(u, thread, int(f0.read_register('rip')), int(f0.read_register('rsp')),
                     rt.switch_pc())
    # gdb unwinds no further than main; when the real frame the UT's
    # frames hang from is main itself, it must.
    global _past_main
    _past_main = gdb.parameter('backtrace past-main')
    _set_past_main(True)
    _sel = sel
    gdb.invalidate_cached_frames()
    frames = _ut_frames()
    if not frames:
        _deselect()
        raise WeftError('cannot unwind Weft thread %d' % u.id)
    # Show the program's code first: the first frame outside Weft.
    chosen = frames[0]
    for f in frames:
        if f.pc() and not rt.in_weft(f.pc()) and f.type() != gdb.SIGTRAMP_FRAME:
            chosen = f
            break
    chosen.select()
    return chosen


def _print_frame():
    gdb.execute('frame', to_string=False)


# ---------------------------------------------------------------------------
# Commands


class InfoWeftThreads(gdb.Command):
    """List Weft's user threads (UTs): info weft-threads [ID...]

Each line: the UT's id (main is 1, the others count up in creation order
and are never reused), its name, scheduling policy and priority, the VP it
belongs to, its state and what it waits on: the object's kind and address, a mutex's owner, a
condition's mutex, a semaphore's value, a sleep's or timed wait's deadline.
'*' marks the UT whose frames are current (weft-thread).  Works on a live
process and on a core file."""

    def __init__(self):
        super(InfoWeftThreads, self).__init__('info weft-threads', gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        rt = runtime()
        want = set(int(x) for x in gdb.string_to_argv(arg)) if arg.strip() else None
        uts = rt.uts()
        running = rt.running()
        current = _sel.ut.addr if _sel else None
        if current is None:
            for addr in running:
                current = addr
                break
        rows = []
        for u in uts:
            if want is not None and u.id not in want:
                continue
            sched = '%s/%d' % (_POLICIES.get(u.policy, str(u.policy)), u.prio)
            vp = '-' if u.vp is None else str(u.vp)
            rows.append(('*' if u.addr == current else ' ', str(u.id), u.name,
                         sched, vp, describe(rt, u, running)))
        if not rows:
            gdb.write('No Weft threads.\n' if want is None else 'No Weft thread with those ids.\n')
            return
        wid = max(2, max(len(r[1]) for r in rows))
        wname = min(16, max(4, max(len(r[2]) for r in rows)))
        wsched = max(5, max(len(r[3]) for r in rows))
        gdb.write('  %-*s %-*s %-*s %-2s %s\n' % (wid, 'Id', wname, 'Name', wsched, 'Sched', 'VP', 'State'))
        for r in rows:
            gdb.write('%s %-*s %-*s %-*s %-2s %s\n' % (r[0], wid, r[1], wname, r[2], wsched, r[3], r[4], r[5]))


class WeftThread(gdb.Command):
    """Select a Weft user thread: weft-thread [ID | current]

With ID, make that UT's frames current, so that bt, frame, up, down and
info locals work on it; the innermost frame of the program's own code is
selected.  The kernel thread's real frames stay below it (frame 0 and
up), hidden from bt.  `weft-thread current` (or 0) goes back to the real
frames, as does resuming the program.  Without an argument, say which UT
is current.  See also: weft-thread apply."""

    def __init__(self):
        super(WeftThread, self).__init__('weft-thread', gdb.COMMAND_STACK, prefix=True)

    def invoke(self, arg, from_tty):
        rt = runtime()
        arg = arg.strip()
        if not arg:
            if _sel is not None:
                u = _sel.ut
            else:
                running = rt.running()
                u = next((x for x in rt.uts() if x.addr in running), None)
                if u is None:
                    gdb.write('No Weft thread is current.\n')
                    return
            gdb.write('[Current Weft thread is %d "%s" (%s)]\n' % (u.id, u.name, describe(rt, u)))
            return
        if arg in ('current', '0'):
            _deselect()
            gdb.newest_frame().select()
            gdb.write('[Back to the kernel thread\'s own frames]\n')
            _print_frame()
            return
        try:
            ut_id = int(arg, 0)
        except ValueError:
            raise WeftError('usage: weft-thread [ID | current | apply ...]')
        u = rt.find(ut_id)
        select_ut(rt, u)
        gdb.write('[Switching to Weft thread %d "%s" (%s)]\n' % (u.id, u.name, describe(rt, u)))
        _print_frame()


class WeftThreadApply(gdb.Command):
    """Run a command on Weft user threads: weft-thread apply all|ID... COMMAND

For each UT named (all: every UT that has a stack, in id order), print a
header, make its frames current as weft-thread does, and run COMMAND:
`weft-thread apply all bt` prints every UT's backtrace.  The UT selected
before, if any, is current again afterwards."""

    def __init__(self):
        super(WeftThreadApply, self).__init__('weft-thread apply', gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        rt = runtime()
        words = arg.split()
        ids = []
        i = 0
        if words and words[0] == 'all':
            ids = None
            i = 1
        else:
            while i < len(words) and re.match(r'^\d+$', words[i]):
                ids.append(int(words[i]))
                i += 1
        cmd = ' '.join(words[i:])
        if (ids is not None and not ids) or not cmd:
            raise WeftError('usage: weft-thread apply all|ID... COMMAND')
        uts = rt.uts()
        running = rt.running()
        if ids is None:
            todo = [u for u in uts if u.addr in running or rt.state_name(u) in ('ready', 'blocked', 'deferred')]
        else:
            by_id = {u.id: u for u in uts}
            todo = []
            for n in ids:
                if n not in by_id:
                    raise WeftError('no Weft thread %d' % n)
                todo.append(by_id[n])
        before = _sel.ut if _sel else None
        thread = gdb.selected_thread()
        try:
            for u in todo:
                gdb.write('\nWeft thread %d "%s" (%s):\n' % (u.id, u.name, describe(rt, u, running)))
                try:
                    select_ut(rt, u)
                except (gdb.error, gdb.GdbError) as e:
                    gdb.write('%s\n' % e)
                    continue
                gdb.execute(cmd, from_tty)
        finally:
            _deselect()
            if thread is not None and thread.is_valid():
                thread.switch()
            if before is not None:
                try:
                    select_ut(rt, before)
                except gdb.error:
                    _deselect()


# ---------------------------------------------------------------------------
# gcore: cores with the UTs' stacks in them
#
# Weft guards its stacks with MADV_GUARD_INSTALL markers, which live in the
# page tables inside one mapping.  The kernel refuses to read a marked page
# through /proc/PID/mem (EIO) but reads every other page of the mapping.
# gdb's gcore copies each mapping in 1 MiB pieces and gives up on the rest
# of the mapping at the first piece it cannot read whole, so a slab of
# stacks, whose first page is a guard, was saved as zeros.  Kernel core
# dumps are not affected (they skip the guard pages alone).  weft-gcore
# lets gdb write the core, then copies what it skipped: for each mapping the
# kernel flags as holding guard regions ("gu" in /proc/PID/smaps), every
# page that is resident or swapped and not a guard (bits 63, 62 and 58 of
# /proc/PID/pagemap) is read again and written at its place in the core;
# guard pages and never-touched pages stay zero (holes).  Without pagemap,
# it reads the mapping again piece by piece, and page by page where a
# piece fails.


def _guard_vmas(pid):
    vmas = []
    cur = None
    with open('/proc/%d/smaps' % pid) as f:
        for line in f:
            m = re.match(r'^([0-9a-f]+)-([0-9a-f]+) ', line)
            if m:
                cur = (int(m.group(1), 16), int(m.group(2), 16))
            elif line.startswith('VmFlags:') and cur is not None:
                if 'gu' in line.split()[1:]:
                    vmas.append(cur)
    return vmas


def _load_segments(path):
    with open(path, 'rb') as f:
        eh = f.read(64)
        if eh[:4] != b'\x7fELF' or eh[4] != 2 or eh[5] != 1:
            raise WeftError('%s is not a 64-bit little-endian ELF core' % path)
        phoff, = struct.unpack_from('<Q', eh, 32)
        phentsize, phnum = struct.unpack_from('<HH', eh, 54)
        f.seek(phoff)
        ph = f.read(phentsize * phnum)
    segs = []
    for i in range(phnum):
        p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align = \
            struct.unpack_from('<IIQQQQQQ', ph, i * phentsize)
        if p_type == 1 and p_filesz:
            segs.append((p_vaddr, p_filesz, p_offset))
    return segs


def gcore_fixup(path, pid):
    """Copy into core file `path` the pages of process `pid` that gdb's
    gcore could not read.  Returns (bytes copied, guard pages)."""
    vmas = _guard_vmas(pid)
    if not vmas:
        return 0, 0
    page = os.sysconf('SC_PAGE_SIZE')
    inf = gdb.selected_inferior()
    segs = _load_segments(path)
    try:
        pagemap = open('/proc/%d/pagemap' % pid, 'rb')
    except OSError:
        pagemap = None
    copied = guards = 0
    with open(path, 'r+b') as core:
        def put(addr, data, vaddr, off):
            core.seek(off + addr - vaddr)
            core.write(data)

        for lo, hi in vmas:
            for vaddr, filesz, off in segs:
                a, b = max(lo, vaddr), min(hi, vaddr + filesz)
                if a >= b:
                    continue
                if pagemap is not None:
                    pagemap.seek((a // page) * 8)
                    ent = array.array('Q')
                    ent.frombytes(pagemap.read(((b - a) // page) * 8))
                    run = None
                    for i, e in enumerate(list(ent) + [0]):
                        copy = i < len(ent) and (e >> 62) & 3 and not (e >> 58) & 1
                        if i < len(ent) and (e >> 58) & 1:
                            guards += 1
                        if copy and run is None:
                            run = i
                        elif not copy and run is not None:
                            start, n = a + run * page, (i - run) * page
                            try:
                                data = bytes(inf.read_memory(start, n))
                                put(start, data, vaddr, off)
                                copied += n
                            except gdb.MemoryError:
                                for p in range(start, start + n, page):
                                    try:
                                        put(p, bytes(inf.read_memory(p, page)), vaddr, off)
                                        copied += page
                                    except gdb.MemoryError:
                                        pass
                            run = None
                else:
                    step = 1 << 20
                    for s in range(a, b, step):
                        n = min(step, b - s)
                        try:
                            put(s, bytes(inf.read_memory(s, n)), vaddr, off)
                            copied += n
                        except gdb.MemoryError:
                            for p in range(s, s + n, page):
                                try:
                                    put(p, bytes(inf.read_memory(p, page)), vaddr, off)
                                    copied += page
                                except gdb.MemoryError:
                                    guards += 1
    if pagemap is not None:
        pagemap.close()
    return copied, guards


class WeftGcore(gdb.Command):
    """Save a core file with Weft's thread stacks in it: weft-gcore [FILE]

Runs gdb's generate-core-file (default FILE: core.PID), then copies into
the core the stack pages gdb could not read: Weft's guard markers make
gdb give up on a whole mapping of stacks at the first guard page.  The
guard pages themselves stay zero.  Also installed as `gcore`; gdb's own
command remains as generate-core-file."""

    def __init__(self, name):
        super(WeftGcore, self).__init__(name, gdb.COMMAND_FILES, gdb.COMPLETE_FILENAME)

    def invoke(self, arg, from_tty):
        inf = gdb.selected_inferior()
        args = gdb.string_to_argv(arg)
        path = args[0] if args else 'core.%d' % inf.pid
        gdb.execute('generate-core-file %s' % arg, from_tty)
        if not _is_live():
            return
        try:
            copied, guards = gcore_fixup(path, inf.pid)
        except (OSError, WeftError) as e:
            gdb.write('weft: the stacks behind guard pages could not be added to %s: %s\n' % (path, e))
            return
        if copied:
            gdb.write('weft: added %d KiB of thread stacks to %s (%d guard pages left out)\n'
                      % (copied // 1024, path, guards))


# ---------------------------------------------------------------------------
# Registration: idempotent, since gdb may load this file twice (from the
# library's .debug_gdb_scripts section and from the auto-load directory).


def _register():
    InfoWeftThreads()
    WeftThread()
    WeftThreadApply()
    WeftGcore('weft-gcore')
    WeftGcore('gcore')
    gdb.unwinder.register_unwinder(None, WeftUnwinder(), replace=True)
    gdb.frame_filters['weft-thread'] = WeftFrameFilter()
    old = getattr(gdb, '_weft_event_handlers', None)
    if old:
        for registry, fn in old:
            try:
                registry.disconnect(fn)
            except (RuntimeError, ValueError):
                pass
    handlers = [(gdb.events.cont, _deselect), (gdb.events.exited, _forget_runtime),
                (gdb.events.new_objfile, _forget_runtime), (gdb.events.clear_objfiles, _forget_runtime)]
    # a swapped-in copy-stack UT's frames go back before gdb exits (and
    # detaches from an attached process)
    exiting = getattr(gdb.events, 'gdb_exiting', None)
    if exiting is not None:
        handlers.append((exiting, _deselect))
    for registry, fn in handlers:
        registry.connect(fn)
    gdb._weft_event_handlers = handlers


def _weft_swap_out():
    _swap_out()


_hooked = False


def _hook_detach():
    """Before an explicit detach (no event comes before one) the run stack
    gets its bytes back: a hook, unless the user has one of their own.
    Defined at the first swap, from a command: never while the library
    loads (gdb runs no command then)."""
    global _hooked
    if _hooked:
        return
    _hooked = True
    try:
        if gdb.execute('show user hook-detach', to_string=True).strip():
            return                  # the user's own
    except gdb.error:
        pass                        # none defined
    try:
        gdb.execute('define hook-detach\npython _weft_swap_out()\nend', to_string=True)
    except gdb.error:
        pass


_register()
