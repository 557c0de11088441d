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
	"fmt"
	"io"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/session"
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
}

// DefaultEvery is how often a worker looks for runs to take on a store that does not tell it
// of runs becoming free; WatchedEvery how often on one that does (a safety net, and what tells
// it of a run whose decisions were answered with no process to go on).
const (
	DefaultEvery = time.Second
	WatchedEvery = 10 * time.Second
)

// Takeable tells whether a worker takes a run in the state st: no process holds it, it has not
// ended and nothing but a process stands between it and its end (crashed: its process died, or
// none ever ran it; waiting_resume: its decisions are answered). A run whose last process
// stopped on an error (a divergence, a journal that failed) waits for a person, a paused one
// for its limit to pass, and a session run for its owner's host.
func Takeable(st *store.Status) bool {
	if st.Backend == session.Name || st.Error != nil {
		return false
	}
	return st.State == store.StateCrashed || st.State == store.StateWaitingResume
}

// child is a run a worker's child process executes.
type child struct {
	run  string
	proc engine.Process
}

// Run takes runs until ctx ends, then stops its children and waits for them to exit.
func Run(ctx context.Context, o Options) error {
	if o.Slots < 1 {
		return fmt.Errorf("worker: slots must be 1 or more, got %d", o.Slots)
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
	w := &worker{o: o, children: map[string]*child{}, retry: map[string]backoff{}, exited: make(chan *child, o.Slots)}
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
	retry  map[string]backoff
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
	runs, err := w.o.Service.List(ctx)
	if err != nil {
		w.logf("crw worker: the runs cannot be listed: %v", err)
		return
	}
	rand.Shuffle(len(runs), func(i, j int) { runs[i], runs[j] = runs[j], runs[i] })
	now := time.Now()
	for i := range runs {
		st := &runs[i]
		if len(w.children) >= w.o.Slots {
			return
		}
		if _, busy := w.children[st.Run]; busy || !Takeable(st) || now.Before(w.retry[st.Run].at) {
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

// reap lets go of a child that exited, saying how its run stands.
func (w *worker) reap(ctx context.Context, c *child) {
	delete(w.children, c.run)
	st, err := w.o.Service.Status(ctx, c.run)
	switch {
	case err != nil:
		w.logf("crw worker: run %s: its process (pid %d) exited; its status cannot be read: %v", c.run, c.proc.Pid(), err)
	default:
		w.logf("crw worker: run %s: its process (pid %d) exited; the run is %s", c.run, c.proc.Pid(), st.State)
		if Takeable(st) {
			w.holdOff(c.run)
			w.logf("crw worker: run %s is taken again in %s at the soonest", c.run, w.retry[c.run].delay)
		} else {
			delete(w.retry, c.run)
		}
	}
}

// stop asks each child to stop (SIGTERM: its run's calls in flight are interrupted and the run
// is left as a crash leaves it, to resume) and waits for them to exit.
func (w *worker) stop() {
	for _, c := range w.children {
		_ = syscall.Kill(c.proc.Pid(), syscall.SIGTERM)
	}
	for len(w.children) > 0 {
		c := <-w.exited
		delete(w.children, c.run)
		w.logf("crw worker: run %s: its process (pid %d) stopped", c.run, c.proc.Pid())
	}
}

func (w *worker) logf(format string, args ...any) {
	if w.o.Log != nil {
		fmt.Fprintf(w.o.Log, format+"\n", args...)
	}
}
