// Package cmdutil is what crw's commands share: the Factory each command is built from (its
// streams, the state folder, the store and run service built when first asked for, the --json
// choice), the Outcome a command tells the root of, exit codes, and the helpers of rendering.
package cmdutil

import (
	"context"
	"io"

	"github.com/crw-dev/crw/cmd/crw/internal/iostreams"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
)

// Factory is what a command is built from: one for each command line.
type Factory struct {
	IOStreams *iostreams.IOStreams
	// Backends are the backends of this build.
	Backends *backend.Registry
	// StateDir is where runs live: --state, else $CRW_STATE, else $XDG_STATE_HOME/crw, else
	// ~/.local/state/crw.
	StateDir func() (string, error)
	// StoreAddress is where runs live: --store, else $CRW_STORE; "" is the state folder.
	StoreAddress func() string
	// Service is the run service on the store, and Host this host beside it (the state folder
	// and the runs' folders here): both opened when first asked for, and the same after.
	Service func() (*engine.Service, error)
	Host    func() (ops.Host, error)
	// JSON tells whether --json was given: the command prints one JSON object on stdout.
	JSON func() bool
	// Outcome is what the command tells the root besides its error.
	Outcome *Outcome
}

// Outcome is what a command tells the root of its command line besides its error: the root
// names the run in an error and an audit entry, shapes errors as the command's output, and
// chooses an exit code by it.
type Outcome struct {
	// Run is the run the command works on, once it is known: its errors name it (with --json,
	// their "run" member) when it exists.
	Run string
	// RunOutput: the command prints a run's end ({"run", "status", "result", "error",
	// "calls"}), so its errors take that shape too.
	RunOutput bool
	// Detached: the command hands the run to a process of its own.
	Detached bool
	// AuditDetail is what an audited command that succeeded tells its audit entry.
	AuditDetail string
	// Given names the fields this command line gave otherwise than by their flag alone (the
	// file --input @FILE read): an error about one names it so (FlagNamed).
	Given map[string]string
}

// give says the command line gave field as name.
func (o *Outcome) give(field, name string) {
	if o.Given == nil {
		o.Given = map[string]string{}
	}
	o.Given[field] = name
}

// Common is what every command's Options take from the Factory once its flags are parsed.
type Common struct {
	Ctx          context.Context
	IO           *iostreams.IOStreams
	JSON         bool
	Backends     *backend.Registry
	StateDir     func() (string, error)
	StoreAddress func() string
	Service      func() (*engine.Service, error)
	Host         func() (ops.Host, error)
	Outcome      *Outcome
}

// Common is what a command's Options take of f, in ctx (the command's context).
func (f *Factory) Common(ctx context.Context) Common {
	return Common{Ctx: ctx, IO: f.IOStreams, JSON: f.JSON(), Backends: f.Backends, StateDir: f.StateDir, StoreAddress: f.StoreAddress, Service: f.Service, Host: f.Host, Outcome: f.Outcome}
}

// Print writes v as one JSON object with --json, else what text writes for a reader. A write
// that fails is the root's to report: it watches standard output.
func (c *Common) Print(v any, text func(w io.Writer)) {
	if c.JSON {
		WriteJSON(c.IO.Out, v)
		return
	}
	text(c.IO.Out)
}

// WorksOn says the command works on run from here on: its errors name the run and its audit
// entry records it.
func (c *Common) WorksOn(run string) { c.Outcome.Run = run }

// RunService is the run service of a command that works on run (WorksOn).
func (c *Common) RunService(run string) (*engine.Service, error) {
	c.WorksOn(run)
	return c.Service()
}
