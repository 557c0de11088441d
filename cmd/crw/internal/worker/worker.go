// Package worker is crw worker: a process that takes the runs no process holds and that can go
// on, and executes each in a child process of its own (crw flow _exec RUN, the
// one-run-per-process rule), at most Slots at a time, until it is told to stop; then it stops
// its children, which leave their runs resumable, and waits for them. Workers on any number of
// hosts share a store (an etcd cluster): a run is held by one process at a time, so two
// workers that reach for one run start two children of which one takes it and the other
// exits at once.
package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Options configure a worker.
type Options struct {
	Service *engine.Service
	// Slots bounds the runs its children execute at once.
	Slots int
	// Every is how often it looks for runs to take (DefaultEvery when 0); on a store that tells
	// of runs becoming free (store.RunsWatcher) it looks then, and every WatchedEvery besides.
	Every time.Duration
	// Log is told of each run taken and each child that ended, a line each.
	Log io.Writer
	// ID names the worker in the notes it leaves on runs it cannot take (ID); Offers are what
	// its host offers the runs it takes.
	ID     string
	Offers Offers
}

// unservedWait is how long a worker waits before it looks again at a run it could not serve (a
// repository fetched, codex installed meanwhile).
const unservedWait = time.Minute

// MaxSlots bounds the runs one worker executes at once: each is a process of its own.
const MaxSlots = 1024

// DefaultEvery is how often a worker looks for runs to take on a store that does not tell it
// of runs becoming free; WatchedEvery how often on one that does (a safety net, and what tells
// it of a run whose decisions were answered with no process to go on).
const (
	DefaultEvery = time.Second
	WatchedEvery = 10 * time.Second
)

// Takeable tells whether a worker takes a run in the state st: no process holds it, it has not
// ended and nothing but a process stands between it and its end (queued: none ever ran it;
// crashed: its process died, was stopped or lost its lease; waiting_resume: its decisions are
// answered). A run whose last process stopped on an error of another kind (a divergence, a
// journal that failed) waits for a person, a paused one for its limit to pass, and a session
// run for its owner's host.
func Takeable(st *store.Status) bool {
	if st.Backend == session.Name || (st.Error != nil && !resumable(st.Error)) {
		return false
	}
	return st.State.WaitsForAProcess()
}

// resumable tells whether the error a run's last process stopped with is one a resume goes on
// from as from a crash: the process was told to stop (a worker's SIGTERM, an interrupt), it
// lost its hold on the run, or the store did not answer it for a while.
func resumable(e *journal.RunError) bool {
	reason := e.Reason
	if reason == "" && e.Diagnostic != nil {
		reason = e.Diagnostic.Reason
	}
	return e.Code == string(errs.RunUnavailable) && (reason == "process_stopped" || reason == "lease_lost" || reason == "store_unreachable")
}

// child is a run a worker's child process executes.
type child struct {
	run  string
	proc engine.Process
}

// Run takes runs until ctx ends, then stops its children and waits for them to exit.
func Run(ctx context.Context, o Options) error {
	if o.Slots < 1 || o.Slots > MaxSlots {
		return fmt.Errorf("worker: slots must be 1 to %d, got %d", MaxSlots, o.Slots)
	}
	if o.Service.Launcher == nil {
		return fmt.Errorf("worker: this process cannot start run processes")
	}
	every := o.Every
	if every <= 0 {
		every = DefaultEvery
	}
	var changed <-chan struct{}
	if rw, ok := o.Service.Store.(store.RunsWatcher); ok && o.Every == 0 {
		if ch, err := rw.RunsChanged(ctx); err == nil {
			changed, every = ch, WatchedEvery
		}
	}
	w := &worker{o: o, children: map[string]*child{}, retry: map[string]backoff{}, ended: map[string]bool{}, exited: make(chan *child, o.Slots)}
	w.logf("crw worker %s: %d slots, offers %s", o.ID, o.Slots, o.Offers)
	defer w.stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		w.take(ctx)
		select {
		case <-ctx.Done():
			return nil
		case c := <-w.exited:
			w.reap(ctx, c)
		case _, ok := <-changed:
			if !ok { // the watch failed: back to looking on the timer
				changed = nil
				tick.Reset(DefaultEvery)
			}
		case <-tick.C:
		}
	}
}

type worker struct {
	o        Options
	children map[string]*child
	// retry holds off a run whose child ended without ending it (it could not take the run,
	// or died), or could not be started: it is taken again no sooner than its backoff says.
	retry map[string]backoff
	// ended are the runs seen ended: an end is final, so their status is not read again.
	ended  map[string]bool
	exited chan *child
}

// A run whose child ended without ending it waits retryFirst before it is taken again, twice
// that after a second time, and so on up to retryMost: a run whose process dies at once (its
// workflow gone, a host it cannot reach) costs a process now and then, not a slot spinning.
const (
	retryFirst = 5 * time.Second
	retryMost  = 5 * time.Minute
)

// backoff is when a run may be taken again, and how long it waited last.
type backoff struct {
	at    time.Time
	delay time.Duration
}

// holdOff makes run wait before it is taken again, twice as long as the last time.
func (w *worker) holdOff(run string) {
	b := w.retry[run]
	b.delay = min(max(2*b.delay, retryFirst), retryMost)
	b.at = time.Now().Add(b.delay)
	w.retry[run] = b
}

// take starts a child for each takeable run while slots are free, in an order of its own: the
// workers of a cluster that look at once reach for different runs rather than all for the
// oldest, of which each would get one child in vain.
func (w *worker) take(ctx context.Context) {
	if len(w.children) >= w.o.Slots {
		return
	}
	ids, err := w.o.Service.Store.List(ctx)
	if err != nil {
		w.logf("crw worker: the runs cannot be listed: %v", err)
		return
	}
	rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	now := time.Now()
	for _, id := range ids {
		if len(w.children) >= w.o.Slots {
			return
		}
		if _, busy := w.children[id]; busy || w.ended[id] || now.Before(w.retry[id].at) {
			continue
		}
		// A journal a machine's restart left waiting for its recovery (the worker's own host
		// restarted) is recovered here, as the resume that takes the run would: its status
		// can then be read, and the run taken.
		st, err := w.o.Service.ActingStatus(ctx, id)
		if err != nil {
			continue // deleted meanwhile, or unreadable: inspect says why
		}
		if st.State == store.StateEnded {
			w.ended[id] = true
			delete(w.retry, id)
			continue
		}
		if !Takeable(st) {
			continue
		}
		if !w.serves(ctx, st.Run) {
			continue
		}
		env, err := w.o.Service.Env(ctx, st.Run)
		if err != nil {
			w.logf("crw worker: run %s: %v", st.Run, err)
			w.holdOff(st.Run)
			continue
		}
		p, err := w.o.Service.Launcher.Launch(st.Run, env)
		if err != nil {
			w.logf("crw worker: run %s: its process cannot be started: %v", st.Run, err)
			w.holdOff(st.Run)
			continue
		}
		c := &child{run: st.Run, proc: p}
		w.children[st.Run] = c
		w.logf("crw worker: run %s taken (%s): pid %d", st.Run, st.State, p.Pid())
		go func() {
			<-p.Exited()
			w.exited <- c
		}()
	}
}

// serves tells whether this worker's host can serve the run; when it cannot, it leaves a note
// on the run saying why (store.KindWorkers: status and inspect say it) and looks again after
// unservedWait. A note of its own left earlier is deleted once it can.
func (w *worker) serves(ctx context.Context, run string) bool {
	spec, err := w.o.Service.Store.Spec(ctx, run)
	if err != nil {
		return false // deleted meanwhile, or unreadable: inspect says why
	}
	notes := w.o.Service.Store.Records(run, store.KindWorkers)
	why := w.o.Offers.Serves(ctx, spec)
	if why == "" {
		if err := notes.Delete(ctx, w.o.ID); err != nil {
			w.logf("crw worker: run %s: the note that this worker could not take it cannot be deleted: %v", run, err)
		}
		return true
	}
	w.retry[run] = backoff{at: time.Now().Add(unservedWait), delay: w.retry[run].delay}
	data, err := json.Marshal(store.WorkerNote{Worker: w.o.ID, Why: why, At: time.Now().UTC()})
	if err == nil {
		err = notes.Put(ctx, w.o.ID, data)
	}
	if err != nil {
		w.logf("crw worker: run %s: not taken (%s); the note saying so cannot be written: %v", run, why, err)
	} else {
		w.logf("crw worker: run %s: not taken: %s", run, why)
	}
	return false
}

// reap lets go of a child that exited, saying how its run stands: a run it did not end is
// taken again after a backoff, and the last line of the child's log says why (it is on this
// host alone).
func (w *worker) reap(ctx context.Context, c *child) {
	delete(w.children, c.run)
	st, err := w.o.Service.Status(ctx, c.run)
	switch {
	case err != nil:
		w.logf("crw worker: run %s: its process (pid %d) exited; its status cannot be read: %v", c.run, c.proc.Pid(), err)
		w.holdOff(c.run)
	case Takeable(st):
		w.holdOff(c.run)
		w.logf("crw worker: run %s: its process (pid %d) exited, the run %s (%s); taken again in %s at the soonest",
			c.run, c.proc.Pid(), st.State, lastLine(c.proc.Log()), w.retry[c.run].delay)
	default:
		w.logf("crw worker: run %s: its process (pid %d) exited; the run is %s", c.run, c.proc.Pid(), st.State)
		delete(w.retry, c.run)
		if st.State == store.StateEnded {
			w.ended[c.run] = true
		}
	}
}

// lastLine is the last line of a child's log ("no log" when it cannot be read), at most 300
// bytes of it.
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "no log"
	}
	defer f.Close()
	const tail = 4096
	buf := make([]byte, tail)
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return "no log"
	}
	n, _ := f.ReadAt(buf, max(0, size-tail))
	lines := strings.Split(strings.TrimSpace(string(buf[:n])), "\n")
	line := lines[len(lines)-1]
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	return "its log: " + path + ": " + line
}

// stopWait bounds how long a stopping worker waits for its children before it kills them: a
// child stopped (SIGSTOP) or stuck would otherwise hold the worker forever. A killed child's
// run is left as a crash leaves it.
const stopWait = 30 * time.Second

// stop asks each child to stop (SIGTERM: its run's calls in flight are interrupted and the run
// is left for a resume) and waits for them to exit, killing those still there after stopWait.
func (w *worker) stop() {
	for _, c := range w.children {
		_ = syscall.Kill(c.proc.Pid(), syscall.SIGTERM)
	}
	deadline := time.After(stopWait)
	for len(w.children) > 0 {
		select {
		case c := <-w.exited:
			delete(w.children, c.run)
			w.logf("crw worker: run %s: its process (pid %d) stopped", c.run, c.proc.Pid())
		case <-deadline:
			for _, c := range w.children {
				w.logf("crw worker: run %s: its process (pid %d) did not stop within %s: killed", c.run, c.proc.Pid(), stopWait)
				_ = syscall.Kill(c.proc.Pid(), syscall.SIGKILL) // a stopped process too
			}
			deadline = nil
		}
	}
}

func (w *worker) logf(format string, args ...any) {
	if w.o.Log != nil {
		fmt.Fprintf(w.o.Log, format+"\n", args...)
	}
}
