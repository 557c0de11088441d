// Package cmdtest is what the tests of crw's commands build on: a Factory on test streams and
// a state folder of its own with the fake backend, runs made there, and a command's flags
// parsed through its runF.
package cmdtest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/iostreams"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
	"github.com/crw-dev/crw/store/local/journalfile/rowlog"
)

// Env is one command line's surroundings in a test.
type Env struct {
	Factory         *cmdutil.Factory
	In, Out, ErrOut *bytes.Buffer
	// State is the state folder; Dir a folder for the test's files.
	State, Dir string
	// JSON is what the Factory says of --json.
	JSON bool
	svc  *engine.Service
	st   *local.Store
}

// New is an Env with an empty state folder in a temporary folder.
func New(t testing.TB) *Env {
	t.Helper()
	dir := t.TempDir()
	ios, in, out, errOut := iostreams.Test()
	e := &Env{In: in, Out: out, ErrOut: errOut, State: filepath.Join(dir, "state"), Dir: dir}
	backends := backend.NewRegistry(fake.Descriptor())
	e.Factory = &cmdutil.Factory{
		IOStreams:    ios,
		Backends:     backends,
		StateDir:     func() (string, error) { return e.State, nil },
		StoreAddress: func() string { return "" },
		Host:         func() (ops.Host, error) { _, err := e.service(backends); return e.st, err },
		Service:      func() (*engine.Service, error) { return e.service(backends) },
		JSON:         func() bool { return e.JSON },
		Outcome:      &cmdutil.Outcome{},
	}
	return e
}

func (e *Env) service(backends *backend.Registry) (*engine.Service, error) {
	if e.svc == nil {
		svc, st, err := ops.Open(e.State, backends)
		if err != nil {
			return nil, err
		}
		e.svc, e.st = svc, st
	}
	return e.svc, nil
}

// Common is the Options part a command takes of the Env's Factory.
func (e *Env) Common() cmdutil.Common { return e.Factory.Common(context.Background()) }

// File writes content to name in the Env's folder and returns its path.
func (e *Env) File(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(e.Dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// Run runs script (a workflow's source) to its end on the fake backend with answers (an
// answers file's JSON; "" synthesizes every answer), in the state folder, and returns its end.
func (e *Env) Run(t testing.TB, script, answers string) *store.Status {
	t.Helper()
	svc, err := e.Factory.Service()
	require.NoError(t, err)
	co := engine.CreateOptions{Workflow: e.File(t, "wf.js", script), Backend: fake.Name}
	if answers != "" {
		co.BackendOpts = map[string]string{"answers": e.File(t, "answers.json", answers)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	end, err := svc.Run(ctx, co, engine.ExecOptions{})
	require.NoError(t, err)
	return end
}

// Parse runs cmd on args with its runF and returns what runF was given: how the command line
// became Options, with nothing run.
func Parse[O any](t testing.TB, e *Env, newCmd func(*cmdutil.Factory, func(O) error) *cobra.Command, args ...string) (O, error) {
	t.Helper()
	var got O
	err := execute(e, newCmd(e.Factory, func(o O) error { got = o; return nil }), args)
	return got, err
}

// Exec runs cmd on args as the command line would, and returns its error as the root would
// be given it (an error about a field of the engine's naming its flag).
func Exec[O any](t testing.TB, e *Env, newCmd func(*cmdutil.Factory, func(O) error) *cobra.Command, args ...string) error {
	t.Helper()
	return execute(e, newCmd(e.Factory, nil), args)
}

func execute(e *Env, cmd *cobra.Command, args []string) error {
	cmd.SetArgs(args)
	cmd.SetIn(e.In)
	cmd.SetOut(e.ErrOut)
	cmd.SetErr(e.ErrOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	_, err := cmd.ExecuteC()
	return err
}

// OneCall is a workflow of one explorer call on node a, which returns {"v": the answer's v}.
const OneCall = `import { agent } from "crw:agent";
const S = { type: "object", additionalProperties: false, required: ["v"], properties: { v: { type: "string" } } };
export default async function main() {
  const r = await agent.call({ role: "explorer", node: "a", prompt: "look", schema: S });
  return { v: r.output.v };
}
`

// OneAnswer answers OneCall's call {"v": "hi"}, for 100 input and 20 output tokens.
const OneAnswer = `{"answers": [{"turns": [{"json": {"v": "hi"}, "tokens": {"input": 100, "output": 20}}]}]}`

// LeaveUnrecovered leaves an ended run's journal as a machine's restart leaves one whose
// process was killed: its log's closing checkpoint (a frame of 17 bytes) cut off, and its boot
// another's (rowlog.PlayRestart). Readers then say it waits for its recovery.
func (e *Env) LeaveUnrecovered(t testing.TB, run string) {
	t.Helper()
	logPath := filepath.Join(e.State, "flow", run, local.JournalLog)
	info, err := os.Stat(logPath)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(logPath, info.Size()-17))
	_, err = rowlog.PlayRestart(logPath, 0)
	require.NoError(t, err)
}
