// Package foreground is a run seen from this process's terminal: executed here (crw flow run,
// resume, the process of a detached run) or followed from another (crw flow follow), with live
// progress on stderr, and its end printed with the exit code it makes.
package foreground

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/runlog"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/diagnosis"
	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/store"
)

// Run executes (or, resumed, goes on with) a run in this process with live progress and
// prints its end.
func Run(c *cmdutil.Common, svc *engine.Service, id string, resumed bool) error {
	ctx, stop := signal.NotifyContext(c.Ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	prog := newProgressLine(c.IO.ErrOut, c.IO.ErrIsTTY, c.JSON && !c.IO.ErrIsTTY)
	if resumed {
		prog.verb = "resumed"
	}
	onEvent := prog.event
	if prog.quiet {
		onEvent = nil // it would show none: the run sends none (a resume's replay, one a call)
	}
	end, err := Execute(ctx, svc, id, engine.ExecOptions{
		Console: prog.logWriter(), OnEvent: onEvent, OnStart: prog.started, Warn: Warner(c.IO.ErrOut),
	})
	prog.done()
	if err != nil {
		return err
	}
	PrintEnd(c, end)
	return ExitFor(end)
}

// Follow shows the live progress of a run another process holds until it ends, and prints its
// end.
func Follow(c *cmdutil.Common, svc *engine.Service, id string) error {
	prog := newProgressLine(c.IO.ErrOut, c.IO.ErrIsTTY, c.JSON && !c.IO.ErrIsTTY)
	prog.verb = "followed"
	var last string
	var calls *callLines
	// The workflow's lines, as its log keeps them, above the progress.
	runLog, logAt := svc.Store.Log(id), int64(0)
	end, err := svc.Follow(c.Ctx, id, func(st *store.Status) {
		if calls == nil {
			// Said once the run was read: a run that is not there has only its error.
			// Told from the start of the run's last process (its last calls and lines, then
			// what it writes on), whether it still runs or not: the workflow's lines and the
			// calls begin at the same point.
			prog.started(id)
			calls = lastProcessLines(c.Ctx, svc.Store, id, st.LastSeq)
		}
		logAt = calls.readWith(prog, runLog, logAt)
		ev := progressEvent(st)
		if line := summary(id, ev, nil, -1, 0); line != last && !prog.quiet {
			if prog.tty {
				prog.event(ev)
			} else if last == "" || st.State != store.StateRunning {
				// The calls' lines say what a running run does; its other states are said once.
				ended := cmdutil.CountsLine(st.Calls)
				if len(st.Calls) == 0 {
					ended = "no call ended yet"
				}
				line := fmt.Sprintf("%s: %d in flight, %s", st.State, st.InFlight, ended)
				if st.State == store.StateQueued {
					// It waits here for a process to take it: say what takes it.
					line += "; " + diagnosis.StateNext(st)
				}
				prog.writeLine(line)
			}
			last = line
		}
	})
	if calls != nil {
		calls.readWith(prog, runLog, logAt) // the calls that ended with the run, and its last lines
	}
	prog.done()
	if err != nil {
		return err
	}
	PrintEnd(c, end)
	return ExitFor(end)
}

// readWith prints the calls' lines and the workflow's lines written since the last read, in
// the order they were written, and returns the log's offset after them. Each source is in
// time order already: the log's lines stream through, each after the calls' lines written
// before it (or at the same instant: a workflow's line is most often written on what a call
// gave), so only the calls' lines since the last read are held, never the log.
func (l *callLines) readWith(prog *progressLine, runLog store.Log, logAt int64) int64 {
	if l.backlog > 0 {
		return l.readPast(prog, runLog, logAt)
	}
	var calls []timedEvent
	l.read(func(at time.Time, ev progress.Event) { calls = append(calls, timedEvent{at, ev}) })
	logW := prog.logWriter()
	logAt = runlog.ConsoleLines(runLog, logAt, func(at time.Time, text string) {
		if at.Before(l.logFrom) {
			return // another process's line
		}
		for len(calls) > 0 && !calls[0].at.After(at) {
			prog.event(calls[0].ev)
			calls = calls[1:]
		}
		_, _ = io.WriteString(logW, text)
	})
	for _, c := range calls {
		prog.event(c.ev)
	}
	return logAt
}

// timedEvent is a call's start or end, with when its row was written.
type timedEvent struct {
	at time.Time
	ev progress.Event
}

// readPast tells what the run's last process wrote before the follow began, whether it still
// runs or not: its calls' last l.backlog starts and ends and the workflow's last l.backlog
// lines from that process's start, in the order they were written, after a note of how many
// of each are left out.
func (l *callLines) readPast(prog *progressLine, runLog store.Log, logAt int64) int64 {
	type logLine struct {
		at   time.Time
		text string
	}
	var calls []timedEvent
	var lines []logLine
	leftCalls, leftLines := 0, 0
	l.read(func(at time.Time, ev progress.Event) {
		if len(calls) == l.backlog {
			calls, leftCalls = calls[1:], leftCalls+1
		}
		calls = append(calls, timedEvent{at, ev})
	})
	logAt = runlog.ConsoleLines(runLog, logAt, func(at time.Time, text string) {
		if at.Before(l.logFrom) {
			return // another process's line
		}
		if len(lines) == l.backlog {
			lines, leftLines = lines[1:], leftLines+1
		}
		lines = append(lines, logLine{at, text})
	})
	l.backlog = 0
	logW := prog.logWriter()
	if note := leftOutNote(leftCalls, leftLines, l.run); note != "" {
		fmt.Fprintln(logW, note)
	}
	for _, line := range lines {
		for len(calls) > 0 && !calls[0].at.After(line.at) {
			prog.event(calls[0].ev)
			calls = calls[1:]
		}
		_, _ = io.WriteString(logW, line.text)
	}
	for _, c := range calls {
		prog.event(c.ev)
	}
	return logAt
}

// leftOutNote says what readPast left out ("" when nothing).
func leftOutNote(calls, lines int, run string) string {
	var what, where []string
	if calls > 0 {
		what = append(what, fmt.Sprintf("%d earlier starts and ends of calls", calls))
		where = append(where, "crw flow trace "+run+" has every row")
	}
	if lines > 0 {
		what = append(what, fmt.Sprintf("%d earlier lines of the workflow", lines))
		where = append(where, "crw flow logs "+run+" every line")
	}
	if len(what) == 0 {
		return ""
	}
	return fmt.Sprintf("(%s of this run's last process are left out: %s)", strings.Join(what, " and "), strings.Join(where, ", "))
}

// Execute runs a run in this process, with the environment the run recorded put into the
// process's own first (refused, before anything of the run changes, when it cannot be used),
// and what was there put back when the run is done.
func Execute(ctx context.Context, svc *engine.Service, id string, x engine.ExecOptions) (*store.Status, error) {
	env, err := svc.Env(ctx, id)
	if err != nil {
		return nil, err
	}
	restore := useEnv(env)
	defer restore()
	return svc.Execute(ctx, id, x)
}

// Warner prints a warning of this process (engine.ExecOptions.Warn: what a backend's lifecycle
// hook could not do) on w.
func Warner(w io.Writer) func(string) {
	return func(warning string) { fmt.Fprintf(w, "crw: warning: %s\n", warning) }
}

// useEnv sets the variables env names in this process's environment and returns what puts
// back what was there.
func useEnv(env map[string]string) (restore func()) {
	type was struct {
		value string
		set   bool
	}
	old := map[string]was{}
	for k, v := range env {
		value, set := os.LookupEnv(k)
		old[k] = was{value, set}
		os.Setenv(k, v)
	}
	return func() {
		for k, w := range old {
			if w.set {
				os.Setenv(k, w.value)
			} else {
				os.Unsetenv(k)
			}
		}
	}
}
