// Package setup is crw codex setup: crw's roles and its spawn hook written, trusted, into a
// CODEX_HOME.
package setup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/codexsetup"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
)

// Options are crw codex setup's.
type Options struct {
	cmdutil.Common
	// CodexHome is --codex-home as given; Roles a role table file; Codex the codex binary.
	CodexHome, Roles, Codex string
	// Check writes nothing: it reports what is missing.
	Check bool
}

// NewCmdSetup is crw codex setup; runF, when not nil, runs in place of the command.
func NewCmdSetup(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
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

With --check nothing is written: it reports what is missing or out of date.

Exit status: 0 when everything was written (with --check: is up to date), 1 when something
could not be written (with --check: is missing or out of date), 2 on bad input.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, &opts.Common, opts, nil, runF, runSetup),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.CodexHome, "codex-home", "", "the CODEX_HOME to set up (default $CODEX_HOME, else ~/.codex)")
	fl.StringVar(&opts.Roles, "roles", "", "a role table file: the pairs the role files pin")
	fl.StringVar(&opts.Codex, "codex", "", "the codex binary that tells the hook's hash (default $CRW_CODEX, else codex on PATH)")
	fl.BoolVar(&opts.Check, "check", false, "write nothing: report what is missing or untrusted (exit 1 then)")
	return cmd
}

func runSetup(opts *Options) error {
	home, err := codexHome(opts.CodexHome)
	if err != nil {
		return err
	}
	if !opts.Check {
		if err := openState(opts); err != nil {
			return err
		}
		opts.Outcome.AuditDetail = "CODEX_HOME " + home
	}
	so, err := setupOptions(opts, home)
	if err != nil {
		return err
	}
	rep, err := codexsetup.Setup(opts.Ctx, so, opts.Check)
	if errors.Is(err, codexsetup.ErrUserFile) {
		return errs.New(errs.InvalidRequest, "crw codex setup: %v", err).Wrap(err)
	}
	if err != nil {
		return errs.New(errs.CapabilityUnavailable, "crw codex setup: %v", err).Wrap(err)
	}
	opts.Print(rep, func(w io.Writer) {
		printReport(w, rep, opts.Check)
	})
	if opts.Check && len(rep.Missing) > 0 {
		return cmdutil.Failed
	}
	return nil
}

// openState makes the state folder and opens its store: a setup is a mutation the audit
// records, in the state folder its hook uses.
func openState(opts *Options) error {
	state, err := opts.StateDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return errs.New(errs.CapabilityUnavailable, "the state folder %s cannot be made", state).Wrap(err)
	}
	_, err = opts.Service()
	return err
}

// setupOptions are what the setup writes into home: the role table's pairs, the hook's command
// on this crw and state folder, and the trust the codex binary tells.
func setupOptions(opts *Options, home string) (codexsetup.Options, error) {
	var pairs map[string]journal.Pair
	if opts.Roles != "" {
		table, err := inputs.LoadRoles(opts.Roles)
		if err != nil {
			return codexsetup.Options{}, err
		}
		pairs = table
	}
	state, err := opts.StateDir()
	if err != nil {
		return codexsetup.Options{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return codexsetup.Options{}, errs.New(errs.CapabilityUnavailable, "crw cannot find its own binary for the hook's command").Wrap(err)
	}
	so := codexsetup.Options{CodexHome: home, Roles: pairs, HookCommand: hookCommand(self, state)}
	if bin, err := codex.FindCodex(opts.Codex); err == nil {
		so.Trust = codexsetup.CodexTrust(bin)
	} else if opts.Codex != "" {
		return so, errs.New(errs.InvalidRequest, "--codex %s: %v", opts.Codex, err)
	}
	return so, nil
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

// codexHome is the CODEX_HOME to set up: --codex-home, else $CODEX_HOME, else ~/.codex.
func codexHome(flag string) (string, error) {
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

func printReport(w io.Writer, rep *codexsetup.Report, check bool) {
	fmt.Fprintf(w, "CODEX_HOME %s\n", rep.CodexHome)
	for _, r := range rep.Roles {
		pair := "the host's pair"
		if r.Pair.Model != "" {
			pair = r.Pair.Model
			if r.Pair.Effort != "" {
				pair += "/" + r.Pair.Effort
			}
		}
		fmt.Fprintf(w, "  role %-12s %-13s %s\n", r.Role, r.Status, pair)
	}
	fmt.Fprintf(w, "  spawn hook        %s", rep.Hook.Status)
	if rep.Hook.Detail != "" {
		fmt.Fprintf(w, ": %s", rep.Hook.Detail)
	}
	fmt.Fprintln(w)
	for _, m := range rep.Missing {
		fmt.Fprintf(w, "missing: %s\n", m)
	}
	if !check && len(rep.Written) == 0 {
		fmt.Fprintln(w, "nothing to write: all in place")
	}
}
