package session_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/bound"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/backend/session/host"
	"github.com/crw-dev/crw/engine/backend/session/sessiontest"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// hexOwner is an owner thread id of the form a binding takes.
const hexOwner = "0199a0b1-c2d3-7e4f-8a9b-0c1d2e3f4a5b"

// decideFirst waits for a decision, and makes no call.
const decideFirst = `import crw from "crw";
const schema = { type: "object", additionalProperties: false, required: ["go"], properties: { go: { type: "boolean" } } };
export default async function main() {
  return (await crw.decide({ id: "go", question: "Go?", schema })).go;
}
`

// bindingRig is a state folder with session runs on a host the test plays, and the owner's
// binding file there.
type bindingRig struct {
	t     *testing.T
	svc   *engine.Service
	st    *local.Store
	wf    string
	lines func() []bound.Line
}

func newBindingRig(t *testing.T) *bindingRig {
	t.Helper()
	dir := t.TempDir()
	st, err := local.New(filepath.Join(dir, "state"))
	require.NoError(t, err)
	hosts := session.Hosts{Dial: func(context.Context, string) (host.Host, error) { return sessiontest.NewHost(hexOwner), nil }}
	r := &bindingRig{t: t, st: st, svc: &engine.Service{Store: st, Backends: backend.NewRegistry(session.Descriptor(hosts))}, wf: filepath.Join(dir, "wf.js")}
	require.NoError(t, os.WriteFile(r.wf, []byte(decideFirst), 0o600))
	r.lines = func() []bound.Line {
		data, err := os.ReadFile(filepath.Join(st.Root(), bound.Folder, hexOwner+".jsonl"))
		require.NoError(t, err)
		var out []bound.Line
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var line bound.Line
			require.NoError(t, json.Unmarshal([]byte(l), &line))
			out = append(out, line)
		}
		return out
	}
	return r
}

func (r *bindingRig) create() string {
	r.t.Helper()
	id, err := r.svc.Create(context.Background(), engine.CreateOptions{Workflow: r.wf, Backend: session.Name,
		BackendOpts: map[string]string{"owner": hexOwner, "host": "unix:///nowhere/app.sock", "wake": "off"}})
	require.NoError(r.t, err)
	return id
}

// execute runs a process of run; it returns the run's end and the process's warnings.
func (r *bindingRig) execute(run string) (*store.Status, []string) {
	r.t.Helper()
	var warnings []string
	end, err := r.svc.Execute(context.Background(), run, engine.ExecOptions{Warn: func(w string) { warnings = append(warnings, w) }})
	require.NoError(r.t, err)
	return end, warnings
}

// kinds are the lines' kinds and runs, one string each.
func kinds(lines []bound.Line) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Kind+" "+l.RunID)
	}
	return out
}

// TestSessionProcessBindsItsOwnerAndLetsItGoAtTheEnd: each process of a session run binds the
// owner to the run once its started row is durable (closing the line of a run that is not
// live), keeps it bound while the run only waits (for a decision), and lets it go once the run
// has ended; an owner that serves another live run stays its, with a warning of the process.
func TestSessionProcessBindsItsOwnerAndLetsItGoAtTheEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newBindingRig(t)
	gone := "20200101-000000-aaaaaa" // a run of no process: not live
	bindings := bound.New(r.st.Root())
	require.Empty(t, bindings.BindOwner(hexOwner, bound.Orchestrator(gone, "sha256:x", nil), func(string) bool { return true }))

	run := r.create()
	end, warnings := r.execute(run)
	require.Equal(t, store.RunWaitingDecision, end.Status)
	assert.Empty(t, warnings)
	assert.Equal(t, []string{"orchestrator " + gone, "orchestrator_closed " + gone, "orchestrator " + run}, kinds(r.lines()),
		"the line of a run that is not live is closed, and the run's bound")

	_, err := r.svc.Answer(ctx, run, "go", json.RawMessage(`{"go": true}`), "uid 1", false)
	require.NoError(t, err)
	end, warnings = r.execute(run)
	require.Equal(t, store.RunCompleted, end.Status)
	assert.Empty(t, warnings)
	assert.Equal(t, []string{"orchestrator_closed " + gone, "orchestrator " + run, "orchestrator_closed " + run}, kinds(r.lines())[1:],
		"bound already: not written again; the run's end lets the owner go")

	// Another run holds the owner and is live (its start holds its start lock).
	live := r.create()
	require.Empty(t, bindings.BindOwner(hexOwner, bound.Orchestrator(live, "sha256:x", nil), func(string) bool { return true }))
	release, err := r.st.StartLock(live)
	require.NoError(t, err)
	defer release()
	third := r.create()
	end, warnings = r.execute(third)
	require.Equal(t, store.RunWaitingDecision, end.Status)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "serves live run "+live)
	_, err = r.svc.Answer(ctx, third, "go", json.RawMessage(`{"go": false}`), "uid 1", false)
	require.NoError(t, err)
	end, _ = r.execute(third)
	require.Equal(t, store.RunCompleted, end.Status)
	lines := kinds(r.lines())
	assert.Equal(t, "orchestrator "+live, lines[len(lines)-1], "the live run keeps its owner, whatever the other run's end")
}
