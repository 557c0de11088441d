package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/codexsetup"
	"github.com/crw-dev/crw/engine/backend/bound"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local"
)

func newCmdCodex(g *globals, streams IO) *cobra.Command {
	c := &cobra.Command{Use: "codex", Short: "Set Codex up for session runs: crw's roles and its spawn hook", RunE: group}
	c.AddCommand(newCmdCodexSetup(g, streams), newCmdCodexHook(g, streams))
	return c
}

func newCmdCodexSetup(g *globals, streams IO) *cobra.Command {
	var home, roles, codexBin string
	var check bool
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Write crw's six roles and its spawn hook, trusted, into a CODEX_HOME",
		Long: `Write crw's six roles (architect, executor, executor-t1, reviewer, explorer, critic) and its
spawn hook into a CODEX_HOME (--codex-home, else $CODEX_HOME, else ~/.codex), idempotently and
without touching your own settings: a role file per role under crw/agents/ with the role's
overlay and the pair the role table (--roles) decides for it, an [agents.<role>] table for each
role you do not define yourself, and the hook in hooks.json beside your own hooks, trusted with
the hash Codex gives it (read from a codex app-server: --codex, else $CRW_CODEX, else codex on
PATH). The hook gives each spawn of a session run's owner its role's pair.

With --check nothing is written: it reports what is missing or out of date, and exits 1 then.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := codexHomeFlag(home)
			if err != nil {
				return err
			}
			if !check {
				// A setup is a mutation the audit records, in the state folder its hook uses.
				state, err := g.stateDir()
				if err != nil {
					return err
				}
				if err := os.MkdirAll(state, 0o700); err != nil {
					return errs.New(errs.CapabilityUnavailable, "the state folder %s cannot be made", state).Wrap(err)
				}
				if _, err := g.service(); err != nil {
					return err
				}
				g.auditDetail = "CODEX_HOME " + home
			}
			var pairs map[string]journal.Pair
			if roles != "" {
				table, err := inputs.LoadRoles(roles)
				if err != nil {
					return err
				}
				pairs = table
			}
			state, err := g.stateDir()
			if err != nil {
				return err
			}
			self, err := os.Executable()
			if err != nil {
				return errs.New(errs.CapabilityUnavailable, "crw cannot find its own binary for the hook's command").Wrap(err)
			}
			opts := codexsetup.Options{CodexHome: home, Roles: pairs, HookCommand: hookCommand(self, state)}
			if bin, err := codex.FindCodex(codexBin); err == nil {
				opts.Trust = codexsetup.CodexTrust(bin)
			} else if codexBin != "" {
				return errs.New(errs.InvalidRequest, "--codex %s: %v", codexBin, err)
			}
			rep, err := codexsetup.Setup(cmd.Context(), opts, check)
			if errors.Is(err, codexsetup.ErrUserFile) {
				return errs.New(errs.InvalidRequest, "crw codex setup: %v", err).Wrap(err)
			}
			if err != nil {
				return errs.New(errs.CapabilityUnavailable, "crw codex setup: %v", err).Wrap(err)
			}
			if g.json {
				writeJSON(streams.Out, rep)
			} else {
				printSetup(streams, rep, check)
			}
			if check && len(rep.Missing) > 0 {
				return errPrinted{code: exitFailed}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&home, "codex-home", "", "the CODEX_HOME to set up (default $CODEX_HOME, else ~/.codex)")
	f.StringVar(&roles, "roles", "", "a role table file: the pairs the role files pin")
	f.StringVar(&codexBin, "codex", "", "the codex binary that tells the hook's hash (default $CRW_CODEX, else codex on PATH)")
	f.BoolVar(&check, "check", false, "write nothing: report what is missing or untrusted (exit 1 then)")
	return cmd
}

// hookCommand is the command Codex runs for each spawn: this crw, on this state folder.
func hookCommand(self, state string) string {
	return shellQuote(self) + " --state " + shellQuote(state) + codexsetup.HookMarker
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func codexHomeFlag(flag string) (string, error) {
	home := flag
	if home == "" {
		home = os.Getenv("CODEX_HOME")
	}
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", errs.New(errs.CapabilityUnavailable, "no CODEX_HOME: give --codex-home").Wrap(err)
		}
		home = filepath.Join(h, ".codex")
	}
	return filepath.Abs(home)
}

func printSetup(streams IO, rep *codexsetup.Report, check bool) {
	fmt.Fprintf(streams.Out, "CODEX_HOME %s\n", rep.CodexHome)
	for _, r := range rep.Roles {
		pair := "the host's pair"
		if r.Pair.Model != "" {
			pair = r.Pair.Model
			if r.Pair.Effort != "" {
				pair += "/" + r.Pair.Effort
			}
		}
		fmt.Fprintf(streams.Out, "  role %-12s %-13s %s\n", r.Role, r.Status, pair)
	}
	fmt.Fprintf(streams.Out, "  spawn hook        %s", rep.Hook.Status)
	if rep.Hook.Detail != "" {
		fmt.Fprintf(streams.Out, ": %s", rep.Hook.Detail)
	}
	fmt.Fprintln(streams.Out)
	for _, m := range rep.Missing {
		fmt.Fprintf(streams.Out, "missing: %s\n", m)
	}
	if !check && len(rep.Written) == 0 {
		fmt.Fprintln(streams.Out, "nothing to write: all in place")
	}
}

// maxHookInput bounds what the spawn hook reads of its event; hookEventWait how long it waits
// for the whole event. Codex writes it at once, and the owner's spawn_agent waits on the hook.
const (
	maxHookInput  = 4 << 20
	hookEventWait = 10 * time.Second
)

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

func newCmdCodexHook(g *globals, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "hook",
		Short: "The spawn hook: Codex runs it on each spawn_agent of a session run's owner",
		Long: `Decide a spawn_agent call by the owner's binding (Codex runs this as a PreToolUse hook; crw
codex setup installs it). A spawn by a subagent and a full-history fork are refused; every other
spawn of a bound owner runs on its role's pair (the role of the message's CRW-ROLE: line, else of
its agent_type). Each decision is a line of the owner's ledger, flow-bound/decisions/<owner>.jsonl.
A spawn of an owner no run binds passes as sent. Whatever goes wrong, the spawn is let through and
stderr says why: the run's bind checks the pair in the end.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			warn := func(format string, a ...any) { fmt.Fprintf(streams.ErrOut, "crw codex hook: "+format+"\n", a...) }
			data, err := readHookEvent(streams.In, maxHookInput, hookEventWait)
			var syntax *json.SyntaxError
			switch {
			case errors.Is(err, errNotObject):
				warn("%v: the spawn passes", err)
				return nil
			case errors.As(err, &syntax):
				warn("the event is not JSON (%v): the spawn passes", err)
				return nil
			case err != nil:
				warn("the event cannot be read (%v): the spawn passes", err)
				return nil
			}
			var ev bound.Event
			if err := json.Unmarshal(data, &ev); err != nil {
				warn("the event is not a JSON object (%v): the spawn passes", err)
				return nil
			}
			state, err := g.stateDir()
			if err != nil {
				warn("no state folder (%v): the spawn passes", err)
				return nil
			}
			if ev.ToolName != "spawn_agent" {
				return nil // a hook crw did not install for this tool: nothing of crw's to decide
			}
			store := bound.New(state)
			line, err := store.Last(ev.SessionID)
			if err != nil {
				warn("the owner's binding is read as none: %v", err)
				line = nil
			}
			if line.Open() && !local.Live(state, line.RunID) {
				line = nil // its run is not running: the owner's spawns are its own meanwhile
			}
			d := bound.Decide(ev, line)
			if line.Open() {
				if err := store.Record(d); err != nil && !errors.Is(err, context.Canceled) {
					warn("the ledger cannot be written (%v): the spawn passes as sent", err)
					return nil
				}
			}
			if out := d.Output(); out != nil {
				_, _ = streams.Out.Write(append(out, '\n'))
			}
			return nil
		},
	}
}
