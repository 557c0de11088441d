// Package cli is crw's command line as a whole: it builds the Factory of a command line, wires
// the commands (cmd/crw/internal/cmd/...) under the root, puts a run's id in place of what
// names it, and is the one place that prints errors, chooses exit codes and audits mutations.
package cli

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmd/codex"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/mcp"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/schema"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/types"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/version"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/worker"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/iostreams"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/gctune"
	"github.com/crw-dev/crw/store"
)

// IO is the process's streams, injected so tests can capture them.
type IO = iostreams.IOStreams

// Main runs crw with the process's arguments and streams and returns the exit code. backends
// are the backends of this build.
func Main(backends *backend.Registry) int {
	// A reader that went away (crw … | head) makes a write fail with EPIPE instead of killing
	// the process: a run goes on to its end, and the command reports what it could not write.
	signal.Ignore(syscall.SIGPIPE)
	return Run(os.Args[1:], *iostreams.System(), backends)
}

// invocation is one command line as the root sees it: its root flags, the Factory its commands
// are built from, the run service once a command opened it, and what the command told of
// itself.
type invocation struct {
	state    string // --state
	storeArg string // --store
	json     bool   // --json, in any of its forms, or --jq
	jsonOpt  jsonFlag
	jq       string // --jq
	filter   *jsonFilter
	backends *backend.Registry
	svc      *engine.Service
	store    store.Store
	host     ops.Host
	outcome  cmdutil.Outcome
	f        *cmdutil.Factory
}

func newInvocation(ios *iostreams.IOStreams, backends *backend.Registry) *invocation {
	inv := &invocation{backends: backends}
	inv.f = &cmdutil.Factory{
		IOStreams:    ios,
		Backends:     backends,
		StateDir:     inv.stateDir,
		StoreAddress: func() string { return ops.StoreAddress(inv.storeArg) },
		Host:         inv.hostOf,
		Service:      inv.service,
		JSON:         func() bool { return inv.json },
		Outcome:      &inv.outcome,
	}
	return inv
}

// takeJSON takes --json and --jq: the output is JSON with either, cut and queried by the
// filter on standard output.
func (inv *invocation) takeJSON() error {
	inv.json = inv.jsonOpt.on || inv.jq != ""
	if inv.filter == nil {
		return nil
	}
	inv.filter.fields = inv.jsonOpt.fields
	if inv.jq != "" {
		code, err := compileJQ(inv.jq)
		if err != nil {
			return err
		}
		inv.filter.query = code
	}
	return nil
}

// stateDir is where runs live: --state, else $CRW_STATE, else $XDG_STATE_HOME/crw, else
// ~/.local/state/crw.
func (inv *invocation) stateDir() (string, error) { return ops.StateDir(inv.state) }

// stateExists reports whether the state folder is there: a command that failed before it
// wrote anything leaves none, and the audit does not make one.
func (inv *invocation) stateExists() bool {
	dir, err := inv.stateDir()
	if err != nil {
		return false
	}
	_, err = os.Stat(dir)
	return err == nil
}

// service is the run service on the state folder, opened on first use.
func (inv *invocation) service() (*engine.Service, error) {
	if inv.svc != nil {
		return inv.svc, nil
	}
	root, err := inv.stateDir()
	if err != nil {
		return nil, err
	}
	svc, st, loc, err := ops.OpenStore(context.Background(), ops.StoreAddress(inv.storeArg), root, inv.backends)
	if err != nil {
		return nil, err
	}
	inv.svc, inv.store, inv.host = svc, st, loc
	return svc, nil
}

// hostOf is this host, as the run service sees it: what needs a run's folder on this host
// (a session run's steps, its owner's binding) needs it.
func (inv *invocation) hostOf() (ops.Host, error) {
	if _, err := inv.service(); err != nil {
		return nil, err
	}
	return inv.host, nil
}

func newRoot(inv *invocation) *cobra.Command {
	root := &cobra.Command{
		Use:   "crw",
		Short: "Run agent workflows written in JavaScript or TypeScript",
		Long: `Run agent workflows written in JavaScript or TypeScript.

Exit status: 0 success, 1 the operation failed, 2 bad input; 3 a run paused and 4 a run waiting
for a decision (crw flow run, resume and follow), 5 and 6 a run still running or held by no
process (crw flow status --exit-status). Each command's help says which it exits with.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// --json and --jq are taken, and a run named by "last" or a unique prefix is its id, by
		// the time a command runs.
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := inv.takeJSON(); err != nil {
				return err
			}
			if cmdutil.WorkflowRunner(cmd) {
				gctune.LargeHeap()
			}
			return resolveRunArgs(inv, cmd, args)
		},
	}
	root.SetOut(inv.f.IOStreams.Out)
	root.SetErr(inv.f.IOStreams.ErrOut)
	root.PersistentFlags().StringVar(&inv.state, "state", "", "the state folder (default $CRW_STATE, else $XDG_STATE_HOME/crw, else ~/.local/state/crw)")
	root.PersistentFlags().StringVar(&inv.storeArg, "store", "", "where runs live: etcd://HOST:PORT[,HOST:PORT…]/PREFIX for an etcd cluster (default $CRW_STORE, else the state folder)")
	root.PersistentFlags().Var(&inv.jsonOpt, "json", "print one JSON object on stdout; --json=F1,F2 keeps the fields named")
	root.PersistentFlags().Lookup("json").NoOptDefVal = "true"
	root.PersistentFlags().StringVar(&inv.jq, "jq", "", "print what the jq expression makes of the JSON output (implies --json; strings as they are)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// pflag says "unknown flag: --NAME" of a long flag c does not take: name the ones it
		// may have meant.
		if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
			return cmdutil.UnknownFlag(c, name)
		}
		return errs.New(errs.InvalidRequest, "%v (see %s --help)", err, c.CommandPath())
	})
	f := inv.f
	root.AddCommand(flow.NewCmdFlow(f), schema.NewCmdSchema(f), codex.NewCmdCodex(f),
		types.NewCmdTypes(f, nil), version.NewCmdVersion(f, nil), mcp.NewCmdMCP(f, nil), worker.NewCmdWorker(f, nil))
	v := version.Build()
	root.Version = v.Version
	root.SetVersionTemplate(v.String())
	complete(inv, root)
	completionExitStatus(root)
	withExamples(root)
	return root
}

// completionExitStatus makes cobra's completion command now (Execute would make it) and ends
// its help, and each shell's, with its Exit status, as every other command's help does.
func completionExitStatus(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		// Alone it prints its help, as crw flow does; a shell it does not have is an unknown
		// command (cobra would print the help and exit 0).
		c.Args, c.RunE = cobra.ArbitraryArgs, cmdutil.Group
		c.Long = strings.TrimRight(c.Long, "\n") + "\n\nExit status: 0 (alone, it prints its help), 2 for a shell it does not have."
		for _, cc := range c.Commands() {
			cc.Long = strings.TrimRight(cc.Long, "\n") + "\n\nExit status: 0 when the script was written, 2 on bad input."
		}
	}
}
