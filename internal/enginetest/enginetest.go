// Package enginetest runs real workflows for tests: the script and its files go to a temp
// folder, the run uses the fake backend and a store of its own (a state folder, or memory), and
// its journal is read back, and for a state folder checked, once the run has ended.
package enginetest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/appserver"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
	"github.com/crw-dev/crw/store/local/journalfile/journalfiletest"
	"github.com/crw-dev/crw/store/mem"
)

// DecisionWorkflow is a workflow of one explorer call on node n (prompt "try"), then the
// decision go ({"go": boolean}, question "go on?"); it returns 1.
const DecisionWorkflow = `import { agent } from "crw:agent";
import crw from "crw";
const go = { type: "object", properties: { go: { type: "boolean" } }, required: ["go"], additionalProperties: false };
export default async function main() {
  await agent.call({ role: "explorer", node: "n", prompt: "try" });
  await crw.decide({ id: "go", question: "go on?", schema: go });
  return 1;
}
`

// Timeout bounds one run; a run that takes longer fails the test instead of hanging it.
const Timeout = 20 * time.Second

// Backends are the backends tests run on: those of crw's build.
func Backends() *backend.Registry {
	return backend.NewRegistry(fake.Descriptor(), appserver.Descriptor())
}

// Service is a run service on st with crw's backends.
func Service(st store.Store) *engine.Service {
	return &engine.Service{Store: st, Backends: Backends()}
}

// LocalService is a run service on a new state folder; it returns the folder too.
func LocalService(t testing.TB) (*engine.Service, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "state")
	st, err := local.New(root)
	require.NoError(t, err)
	return Service(st), root
}

// Created creates a run of script (its workflow file wf.js, the fake backend) on a new state
// folder and leaves it for a process: the service and the run's id.
func Created(t testing.TB, script string) (*engine.Service, string) {
	t.Helper()
	svc, _ := LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(script), 0o644))
	id, err := svc.Create(context.Background(), engine.CreateOptions{Workflow: wf, Backend: "fake"})
	require.NoError(t, err)
	return svc, id
}

// JournalPath is the journal file of a run of a local store.
func JournalPath(svc *engine.Service, run string) string {
	return filepath.Join(svc.Store.(*local.Store).RunDir(run), local.JournalFile)
}

// Option changes one run's configuration.
type Option func(*config)

type config struct {
	name    string
	files   map[string]string
	opts    engine.CreateOptions
	before  func(*engine.CreateOptions)
	memory  bool
	host    *fake.Host
	wrap    func(backend.Backend) backend.Backend
	onEvent func(progress.Event)
}

// Pool sets the number of calls in flight (the engine's default is 4).
func Pool(n int) Option { return func(c *config) { c.opts.Pool = &n } }

// Budget sets the token budget.
func Budget(n int64) Option { return func(c *config) { c.opts.BudgetTokens = n } }

// Roles sets the role table.
func Roles(t inputs.RoleTable) Option { return func(c *config) { c.opts.Roles = t } }

// Input sets the run's input (JSON).
func Input(js string) Option { return func(c *config) { c.opts.Input = json.RawMessage(js) } }

// Name names the workflow file (default wf.js), e.g. wf.ts.
func Name(name string) Option { return func(c *config) { c.name = name } }

// File adds a file beside the workflow, at a slash-separated path relative to its folder
// (lib/schemas/extra.js is served as crw:lib/schemas/extra).
func File(path, content string) Option {
	return func(c *config) { c.files[path] = content }
}

// Configure edits the run's options right before it is created.
func Configure(fn func(*engine.CreateOptions)) Option { return func(c *config) { c.before = fn } }

// Host runs the turns on this fake host, which keeps what it received.
func Host(h *fake.Host) Option { return func(c *config) { c.host = h } }

// Wrap runs the turns on the backend wrap makes of the fake (e.g. a Gate).
func Wrap(wrap func(backend.Backend) backend.Backend) Option {
	return func(c *config) { c.wrap = wrap }
}

// OnEvent is given the run's progress events (engine.ExecOptions.OnEvent).
func OnEvent(fn func(progress.Event)) Option { return func(c *config) { c.onEvent = fn } }

// Memory runs on an in-memory store instead of a state folder.
func Memory() Option { return func(c *config) { c.memory = true } }

// Outcome is one finished (or refused) run.
type Outcome struct {
	Status *store.Status
	Err    error
	Rows   []journal.Row
	// Service is the run's service, on its store; Dir is the workflow's folder.
	Service *engine.Service
	Dir     string
}

// Run runs script with the answers file (JSON; "" means none: every answer is synthesized)
// and fails the test unless the run ended. It returns its end and the journal's rows.
func Run(t testing.TB, script, answers string, opts ...Option) (*store.Status, []journal.Row) {
	t.Helper()
	o := Start(t, script, answers, opts...)
	require.NoError(t, o.Err, "the run did not end")
	return o.Status, o.Rows
}

// Start runs script like Run but returns whatever the run came to, an error included.
func Start(t testing.TB, script, answers string, opts ...Option) Outcome {
	t.Helper()
	c := &config{name: "wf.js", files: map[string]string{}}
	for _, o := range opts {
		o(c)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "wf")
	c.files[c.name] = script
	for rel, content := range c.files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}

	var parsed *fake.Answers
	if answers != "" {
		path := filepath.Join(root, "answers.json")
		require.NoError(t, os.WriteFile(path, []byte(answers), 0o644))
		var err error
		parsed, err = fake.ParseAnswers(path, []byte(answers))
		require.NoError(t, err, "answers file")
		c.opts.BackendOpts = map[string]string{"answers": path}
	}
	eo := c.opts
	eo.Workflow = filepath.Join(dir, c.name)
	if c.before != nil {
		c.before(&eo)
	}
	var svc *engine.Service
	if c.memory {
		svc = Service(mem.New())
	} else {
		st, err := local.New(filepath.Join(root, "state"))
		require.NoError(t, err)
		svc = Service(st)
	}

	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	x := engine.ExecOptions{OnEvent: c.onEvent}
	if c.host != nil {
		x.Backend = fake.New(parsed, c.host)
	}
	if c.wrap != nil {
		host := c.host
		if host == nil {
			host = fake.NewHost("")
		}
		x.Backend = c.wrap(fake.New(parsed, host))
	}
	res, err := svc.Run(ctx, eo, x)
	out := Outcome{Status: res, Err: err, Service: svc, Dir: dir}
	if err != nil {
		return out
	}
	if !c.memory {
		journalfiletest.Check(t, JournalPath(svc, res.Run))
	}
	rows, err := svc.Rows(ctx, res.Run)
	require.NoError(t, err, "read the journal")
	CheckJournal(t, rows)
	out.Rows = rows
	return out
}

// Decode unmarshals the run's result (the workflow's return value) into v.
func Decode(t testing.TB, st *store.Status, v any) {
	t.Helper()
	require.NotNil(t, st)
	require.NoError(t, json.Unmarshal(st.Result, v), "result %s", st.Result)
}

// CallRows returns the rows of one call, in journal order.
func CallRows(rows []journal.Row, call string) []journal.Row {
	var out []journal.Row
	for _, r := range rows {
		if r.Call == call {
			out = append(out, r)
		}
	}
	return out
}

// Types returns the types of rows, in order.
func Types(rows []journal.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Type
	}
	return out
}

// OfType returns the rows of one type, in journal order.
func OfType(rows []journal.Row, typ string) []journal.Row {
	var out []journal.Row
	for _, r := range rows {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// Count counts the rows of one call (any call when call is "") with type typ.
func Count(rows []journal.Row, call, typ string) int {
	n := 0
	for _, r := range rows {
		if r.Type == typ && (call == "" || r.Call == call) {
			n++
		}
	}
	return n
}

// Terminal returns a call's terminal row, failing the test if it has none or several.
func Terminal(t testing.TB, rows []journal.Row, call string) journal.Row {
	t.Helper()
	var found []journal.Row
	for _, r := range CallRows(rows, call) {
		if journal.IsTerminal(r.Type) {
			found = append(found, r)
		}
	}
	require.Len(t, found, 1, "terminal rows of call %s", call)
	return found[0]
}

// Terminals returns every terminal row, in journal order.
func Terminals(rows []journal.Row) []journal.Row {
	var out []journal.Row
	for _, r := range rows {
		if journal.IsTerminal(r.Type) {
			out = append(out, r)
		}
	}
	return out
}
