// goroutines.go — the Go peer (bench-peer-go, Debian's golang-go 1.19): the
// benchmark's peer rows (bench/harness.h, F_PEERS) on goroutines and the
// sync package, each loop the same as the pthread row it stands beside,
// timed by bench/measure.c's method (calibrate n to 0.2 s, one warm-up,
// five repetitions, median, min and max per operation; 10 ms and three with
// QUICK=1) and printed as its CSV line.  bench/run.sh runs it with
// GOMAXPROCS=1, pinned to the CPU the M:1 rows use.
//
//	bench-peer-go [--quick] --tag go KEY...
//
// Go's equivalents: runtime.Gosched for yield; a goroutine and a
// sync.WaitGroup for create + join; sync.Mutex; sync.Cond (with its
// mutex) for the condition ping-pong; a channel of capacity 1 for each
// semaphore; sync.Once.  Go has no goroutine identity, no goroutine-local
// storage and no stack size to set: those rows say n/a.
package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	quick    bool
	targetNs = 0.2e9
	reps     = 5
	epoch    = time.Now()
)

// nowNs is the monotonic clock in nanoseconds, as measure.h's now_ns.
func nowNs() int64 { return int64(time.Since(epoch)) }

type result struct {
	ok               bool
	median, min, max float64
	reps             int
	iters            uint64
	note             string
}

func setMedian(r *result, v []float64) {
	sort.Float64s(v)
	r.ok = true
	r.reps = len(v)
	if len(v)%2 == 1 {
		r.median = v[len(v)/2]
	} else {
		r.median = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	r.min, r.max = v[0], v[len(v)-1]
}

// runTimed is measure.c's run_timed_fn.
func runTimed(timed func(n uint64) int64) result {
	n := uint64(1)
	t := timed(n)
	for t < int64(targetNs/10) && n < 1<<40 {
		if t < int64(targetNs/1000) {
			n *= 10
		} else {
			n *= 2
		}
		t = timed(n)
	}
	if t <= 0 {
		t = 1
	}
	if scale := targetNs * 1.1 / float64(t); scale > 1 {
		n = uint64(float64(n) * scale)
	}
	timed(n/4 + 1) // warm-up
	v := make([]float64, reps)
	for i := range v {
		v[i] = float64(timed(n)) / float64(n)
	}
	var r result
	setMedian(&r, v)
	r.iters = n
	return r
}

// ------------------------------------------------------------------
// Threads

var once sync.Once

func onceInit() {}

func mOnce(n uint64) int64 {
	once.Do(onceInit)
	t0 := nowNs()
	for i := uint64(0); i < n; i++ {
		once.Do(onceInit)
	}
	return nowNs() - t0
}

// Two goroutines call runtime.Gosched in turn: n yields in all, one switch each.
func mYieldBusy(n uint64) int64 {
	var ready int32
	done := make(chan struct{})
	go func() {
		atomic.StoreInt32(&ready, 1)
		for i := uint64(0); i < n/2+1; i++ {
			runtime.Gosched()
		}
		close(done)
	}()
	for atomic.LoadInt32(&ready) == 0 {
		runtime.Gosched()
	}
	t0 := nowNs()
	for i := uint64(0); i < n/2; i++ {
		runtime.Gosched()
	}
	dt := nowNs() - t0
	<-done
	if n >= 2 {
		return dt * int64(n) / int64(n/2*2)
	}
	return dt
}

var joined sync.WaitGroup

func noop() { joined.Done() }

func mCreateJoin(n uint64) int64 {
	t0 := nowNs()
	for i := uint64(0); i < n; i++ {
		joined.Add(1)
		go noop()
		joined.Wait()
	}
	return nowNs() - t0
}

// ------------------------------------------------------------------
// Synchronisation

func mMutex(n uint64) int64 {
	var m sync.Mutex
	t0 := nowNs()
	for i := uint64(0); i < n; i++ {
		m.Lock()
		m.Unlock()
	}
	return nowNs() - t0
}

// fam_sync.c's ring of three mutexes: each lock waits for the other
// goroutine's unlock; per hand-off.
type handoff struct {
	m     [3]sync.Mutex
	n     uint64
	ready int32
}

func handoffB(h *handoff, done chan<- struct{}) {
	h.m[2].Lock()
	atomic.StoreInt32(&h.ready, 1)
	for i := uint64(0); i < h.n; i++ {
		h.m[i%3].Lock()
		h.m[(i+2)%3].Unlock()
	}
	h.m[(h.n+2)%3].Unlock()
	close(done)
}

func mHandoff(n uint64) int64 {
	h := &handoff{n: n/2 + 1}
	rounds := h.n
	h.m[0].Lock()
	h.m[1].Lock()
	done := make(chan struct{})
	go handoffB(h, done)
	for atomic.LoadInt32(&h.ready) == 0 {
		runtime.Gosched()
	}
	t0 := nowNs()
	for i := uint64(0); i < rounds; i++ {
		h.m[i%3].Unlock()
		h.m[(i+2)%3].Lock()
	}
	dt := nowNs() - t0
	h.m[rounds%3].Unlock()
	h.m[(rounds+1)%3].Unlock()
	<-done
	return dt * int64(n) / int64(2*rounds)
}

// fam_bershad.c's pingpong: two goroutines alternate through one mutex
// and one condition; per round trip, the partner's start and end included.
type pingpong struct {
	m    sync.Mutex
	c    *sync.Cond
	turn int
	n    uint64
}

func (p *pingpong) side(me int) {
	p.m.Lock()
	for i := uint64(0); i < p.n; i++ {
		for p.turn != me {
			p.c.Wait()
		}
		p.turn = 1 - me
		p.c.Signal()
	}
	p.m.Unlock()
}

func mPingpong(n uint64) int64 {
	p := &pingpong{n: n}
	p.c = sync.NewCond(&p.m)
	t0 := nowNs()
	done := make(chan struct{})
	go func() {
		p.side(1)
		close(done)
	}()
	p.side(0)
	<-done
	return nowNs() - t0
}

// fam_sync.c's semaphore ping-pong, a channel of capacity 1 as each
// semaphore (a send is the post, a receive the wait); per hand-off.
func mSem(n uint64) int64 {
	rounds := n/2 + 1
	a, b := make(chan struct{}, 1), make(chan struct{}, 1)
	go func() {
		for i := uint64(0); i < rounds; i++ {
			<-a
			b <- struct{}{}
		}
	}()
	t0 := nowNs()
	for i := uint64(0); i < rounds; i++ {
		a <- struct{}{}
		<-b
	}
	dt := nowNs() - t0
	return dt * int64(n) / int64(2*rounds)
}

// ------------------------------------------------------------------
// Memory: goroutines blocked for good on one channel

var (
	parked  = make(chan struct{})
	started sync.WaitGroup
)

func parkedGoroutine() {
	started.Done()
	<-parked
}

func rssBytes() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	var size, res int64
	if err == nil {
		fmt.Sscan(string(b), &size, &res)
	}
	return float64(res) * float64(os.Getpagesize())
}

func memRow(want int) result {
	if quick && want > 10000 {
		return result{note: "skipped with QUICK=1"}
	}
	runtime.GC()
	rss0 := rssBytes()
	started.Add(want)
	for i := 0; i < want; i++ {
		go parkedGoroutine()
	}
	started.Wait()
	rss1 := rssBytes()
	per := (rss1 - rss0) / float64(want)
	return result{ok: true, median: per, min: per, max: per, reps: 1, iters: uint64(want)}
}

// ------------------------------------------------------------------
// The rows

type row struct {
	timed   func(n uint64) int64
	oneshot func() result
	na      string
}

var rows = map[string]row{
	"once":            {timed: mOnce},
	"self":            {na: "Go has no goroutine identity to ask for"},
	"getspecific":     {na: "Go has no goroutine-local storage"},
	"yield_busy":      {timed: mYieldBusy},
	"create_join":     {timed: mCreateJoin},
	"create_join_64k": {na: "Go has no stack size to set: a goroutine starts at 2 KiB and grows (the create + join row)"},
	"mutex":           {timed: mMutex},
	"mutex_handoff":   {timed: mHandoff},
	"pingpong":        {timed: mPingpong},
	"sem":             {timed: mSem},
	"mem_10k":         {oneshot: func() result { return memRow(10000) }},
	"mem_100k":        {oneshot: func() result { return memRow(100000) }},
}

// printResult is measure.c's print_result.
func printResult(key, tag string, r result) {
	note := strings.NewReplacer(",", ";", "\n", ";", "|", ";").Replace(r.note)
	if !r.ok {
		fmt.Printf("%s,%s,na,,,,,,,%s\n", key, tag, note)
		return
	}
	fmt.Printf("%s,%s,ok,%.4f,%.4f,%.4f,%d,%d,,%s\n", key, tag, r.median, r.min, r.max, r.reps, r.iters, note)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: bench-peer-go [--quick] --tag go KEY...")
	os.Exit(2)
}

func main() {
	q := os.Getenv("QUICK")
	quick = q != "" && q != "0"
	tag := ""
	args := os.Args[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch {
		case args[0] == "--quick":
			quick = true
		case args[0] == "--tag" && len(args) > 1:
			tag = args[1]
			args = args[1:]
		default:
			usage()
		}
		args = args[1:]
	}
	if tag != "go" || len(args) == 0 {
		usage()
	}
	if quick {
		targetNs, reps = 0.01e9, 3
	}
	procs := ""
	if p := runtime.GOMAXPROCS(0); p != 1 {
		procs = fmt.Sprintf("GOMAXPROCS=%d, not 1", p)
	}
	for _, key := range args {
		rw, found := rows[key]
		var r result
		switch {
		case !found:
			r.note = "not in the go peer's program (bench/peers/goroutines.go): add the row there"
		case rw.na != "":
			r.note = rw.na
		case rw.oneshot != nil:
			r = rw.oneshot()
		default:
			r = runTimed(rw.timed)
		}
		if r.ok && procs != "" {
			r.note = procs
		}
		printResult(key, tag, r)
	}
	os.Exit(0)
}
