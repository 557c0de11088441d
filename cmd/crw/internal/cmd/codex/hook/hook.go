// Package hook is crw codex hook: the spawn hook Codex runs on each spawn_agent of a session
// run's owner, which decides the spawn by the owner's binding.
package hook

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine/backend/bound"
	"github.com/crw-dev/crw/store/local"
)

// Options are crw codex hook's.
type Options struct {
	cmdutil.Common
	// EventWait is how long the hook waits for the whole event.
	EventWait time.Duration
}

// maxHookInput bounds what the spawn hook reads of its event; hookEventWait how long it waits
// for the whole event. Codex writes it at once, and the owner's spawn_agent waits on the hook.
const (
	maxHookInput  = 4 << 20
	hookEventWait = 10 * time.Second
)

// NewCmdHook is crw codex hook; runF, when not nil, runs in place of the command.
func NewCmdHook(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{EventWait: hookEventWait}
	return &cobra.Command{
		Use:   "hook",
		Short: "The spawn hook: Codex runs it on each spawn_agent of a session run's owner",
		Long: `Decide a spawn_agent call by the owner's binding (Codex runs this as a PreToolUse hook; crw
codex setup installs it). A spawn by a subagent and a full-history fork are refused; every other
spawn of a bound owner runs on its role's pair (the role of the message's CRW-ROLE: line, else of
its agent_type). Each decision is a line of the owner's ledger, flow-bound/decisions/<owner>.jsonl.
A spawn of an owner no run binds passes as sent. Whatever goes wrong, the spawn is let through and
stderr says why: the run's bind checks the pair in the end.

Exit status: 0, whatever it decided (the decision is its output to Codex); 2 on bad flags.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, &opts.Common, opts, nil, runF, runHook),
	}
}

// runHook decides the spawn; whatever goes wrong, it lets the spawn through and says why.
func runHook(opts *Options) error {
	warn := func(format string, a ...any) { fmt.Fprintf(opts.IO.ErrOut, "crw codex hook: "+format+"\n", a...) }
	ev, ok := readEvent(opts, warn)
	if !ok {
		return nil
	}
	state, err := opts.StateDir()
	if err != nil {
		warn("no state folder (%v): the spawn passes", err)
		return nil
	}
	if ev.ToolName != "spawn_agent" {
		return nil // a hook crw did not install for this tool: nothing of crw's to decide
	}
	bindings := bound.New(state)
	line, err := bindings.Last(ev.SessionID)
	if err != nil {
		warn("the owner's binding is read as none: %v", err)
		line = nil
	}
	if line.Open() && !local.Live(state, line.RunID) {
		line = nil // its run is not running: the owner's spawns are its own meanwhile
	}
	d := bound.Decide(ev, line)
	if line.Open() {
		if err := bindings.Record(d); err != nil && !errors.Is(err, context.Canceled) {
			warn("the ledger cannot be written (%v): the spawn passes as sent", err)
			return nil
		}
	}
	if out := d.Output(); out != nil {
		_, _ = opts.IO.Out.Write(append(out, '\n'))
	}
	return nil
}

// readEvent reads the hook's event from stdin; ok is false, with a warning said, when there is
// none to decide.
func readEvent(opts *Options, warn func(string, ...any)) (ev bound.Event, ok bool) {
	data, err := readHookEvent(opts.IO.In, maxHookInput, opts.EventWait)
	var syntax *json.SyntaxError
	switch {
	case errors.Is(err, errNotObject):
		warn("%v: the spawn passes", err)
		return ev, false
	case errors.As(err, &syntax):
		warn("the event is not JSON (%v): the spawn passes", err)
		return ev, false
	case err != nil:
		warn("the event cannot be read (%v): the spawn passes", err)
		return ev, false
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		warn("the event is not a JSON object (%v): the spawn passes", err)
		return ev, false
	}
	return ev, true
}

// errNotObject is an event that is no JSON object.
var errNotObject = errors.New("the event is not a JSON object")

// readHookEvent reads one JSON document from r: the hook decides once the event is whole,
// not when its input ends (a host may leave it open), and within wait, or not at all.
func readHookEvent(r io.Reader, limit int64, wait time.Duration) (json.RawMessage, error) {
	type read struct {
		doc json.RawMessage
		err error
	}
	done := make(chan read, 1)
	go func() {
		in := bufio.NewReader(io.LimitReader(r, limit))
		// The event is an object: anything else is refused at its first byte (a number the
		// input does not end would keep the decoder waiting for its last digit).
		for {
			b, err := in.ReadByte()
			if err != nil {
				done <- read{nil, fmt.Errorf("the input ended before a JSON object")}
				return
			}
			if b == ' ' || b == '\t' || b == '\n' || b == '\r' {
				continue
			}
			_ = in.UnreadByte()
			if b != '{' {
				done <- read{nil, fmt.Errorf("%w: it starts with %q, not {", errNotObject, b)}
				return
			}
			break
		}
		var doc json.RawMessage
		err := json.NewDecoder(in).Decode(&doc)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("the input ended (or passed %d bytes) before one whole JSON document", limit)
		}
		done <- read{doc, err}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case got := <-done:
		return got.doc, got.err
	case <-timer.C:
		return nil, fmt.Errorf("no whole JSON document came in %s", wait)
	}
}
