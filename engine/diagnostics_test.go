package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/engine/timeline"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// Errors, diagnostics and crw's log lines carry no provider text: no answer values, no model
// text, no raw codexErrorInfo. The journal keeps the detail, and show, trace and shadow, views
// of the user's own run, still give it.

// noSecret fails the test when what carries a secret.
func noSecret(t *testing.T, what string, text []byte, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		assert.NotContains(t, string(text), s, "%s carries provider text", what)
	}
}

// runLog is the run's crw.log, nil when crw wrote none.
func runLog(t *testing.T, svc *engine.Service, id string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(svc.Store.(*local.Store).RunDir(id), "crw.log"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	return data
}

const (
	secretValue = "sk-live-PATTERN-7f3a09"            // an answer's value that fails its pattern
	secretInfo  = "sk-live-RAWINFO-91c2 was rejected" // a codexErrorInfo no table lists
)

// TestErrorsCarryNoProviderText: a call whose answer, a secret-looking value, fails its
// pattern twice ends null_model; a call whose turn fails with a raw codexErrorInfo ends held;
// the workflow throws with both CallResults. The run's error, its published status and its log
// carry neither secret; the journal and show keep both.
func TestErrorsCarryNoProviderText(t *testing.T) {
	t.Parallel()
	svc, _ := enginetest.LocalService(t)
	root := t.TempDir()
	wf := filepath.Join(root, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";

export default async function main() {
  const key = await agent.call({ role: "explorer", node: "key", prompt: "the key", schema: {
    type: "object", properties: { key: { type: "string", pattern: "^ok-[0-9]+$" } },
    required: ["key"], additionalProperties: false } });
  const host = await agent.call({ role: "explorer", node: "host", prompt: "anything" });
  const err = new Error("the calls ended: " + JSON.stringify([key, host]));
  err.code = "invalid_request";
  throw err;
}
`), 0o644))
	answers := filepath.Join(root, "answers.json")
	answer, _ := json.Marshal(map[string]string{"key": secretValue})
	info, _ := json.Marshal(secretInfo)
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [
  {"match": {"node": "key"}, "turns": [{"json": `+string(answer)+`}, {"json": `+string(answer)+`}]},
  {"match": {"node": "host"}, "turns": [{"error": `+string(info)+`}]}
]}`), 0o644))
	ctx := context.Background()
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, BackendOpts: map[string]string{"answers": answers}})
	require.NoError(t, err)
	res, err := svc.Execute(ctx, id, engine.ExecOptions{})
	require.NoError(t, err)

	// The run's error: the workflow's message, with both CallResults in it.
	require.Equal(t, store.RunFailed, res.Status)
	require.NotNil(t, res.Error)
	assert.Contains(t, res.Error.Detail, `"status":"null_model","output":null,"reason":"schema_invalid_after_repair"`)
	assert.Contains(t, res.Error.Detail, `"status":"held","output":null,"reason":"host_infra_unknown"`)
	end, _ := json.Marshal(res)
	noSecret(t, "the run's end", end, secretValue, secretInfo)
	st, err := svc.Status(ctx, id)
	require.NoError(t, err)
	published, _ := json.Marshal(st)
	noSecret(t, "the run's status", published, secretValue, secretInfo)
	noSecret(t, "crw.log", runLog(t, svc, id), secretValue, secretInfo)

	// The journal keeps the detail, and show gives it.
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	key := enginetest.OfType(enginetest.CallRows(rows, "c1"), journal.TypeNullModel)
	require.Len(t, key, 1)
	assert.Equal(t, `/key: "`+secretValue+`" does not match the pattern "^ok-[0-9]+$"`, key[0].Detail)
	tl, err := svc.Timeline(ctx, id, timeline.Options{})
	require.NoError(t, err)
	require.Len(t, tl.Calls, 2)
	assert.Contains(t, tl.Calls[0].Detail, secretValue)
	assert.Equal(t, "codexErrorInfo "+secretInfo, tl.Calls[1].Detail)
	assert.Equal(t, "host_infra_unknown", tl.Calls[1].Reason)
}

// TestDivergenceCarriesNoValues: a resumed script whose call's prompt, built from an earlier
// answer, differs from the journal's stops with a divergence. Neither its error nor the line of
// crw.log its diagnostic names quotes the prompts (the answer is in them); shadow shows both.
func TestDivergenceCarriesNoValues(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-DIVERGE-55e1c0"
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	script := func(verb string) []byte {
		return []byte(`import { agent } from "crw:agent";
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "the token" });
  const b = await agent.call({ role: "explorer", node: "b", prompt: "` + verb + ` " + a.output });
  return b.output;
}
`)
	}
	require.NoError(t, os.WriteFile(wf, script("use"), 0o644))
	a, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [
  {"match": {"node": "a"}, "turns": [{"text": "`+secret+`"}]},
  {"match": {"node": "b"}, "turns": [{"text": "done"}]}
]}`))
	require.NoError(t, err)
	host := fake.NewHost("")
	ctx := context.Background()
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	// b is in flight (its answer held) when the process stops.
	require.Error(t, stopWhenSent(t, svc, id, enginetest.GateAnswers(fake.New(a, host), enginetest.Nodes("b")), host, 2))

	require.NoError(t, os.WriteFile(wf, script("USE"), 0o644))
	_, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, host)})
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, errs.RevisionConflict, e.Code)
	assert.Contains(t, e.Detail, "first field that differs: prompt")
	require.NotNil(t, e.Diagnostic)
	shown, _ := json.Marshal(e)
	noSecret(t, "the error", shown, secret)
	noSecret(t, "the error's text", []byte(err.Error()), secret)
	log := runLog(t, svc, id)
	require.Contains(t, string(log), e.Diagnostic.CorrelationID, "the diagnostic names a line of crw.log")
	noSecret(t, "crw.log", log, secret)
	st, err := svc.Status(ctx, id)
	require.NoError(t, err)
	published, _ := json.Marshal(st)
	noSecret(t, "the run's status", published, secret)

	// shadow, a view of the user's own run and script, shows the values.
	rep, err := svc.Shadow(ctx, id, shadow.Options{Script: wf})
	require.NoError(t, err)
	require.Len(t, rep.Divergences, 1)
	require.NotEmpty(t, rep.Divergences[0].Fields)
	assert.Equal(t, "prompt", rep.Divergences[0].Fields[0].Field)
	assert.Equal(t, "use "+secret, rep.Divergences[0].Fields[0].Expected)
	assert.Equal(t, "USE "+secret, rep.Divergences[0].Fields[0].Actual)
	assert.True(t, strings.HasPrefix(e.Detail, "run "+id+": divergence: call 2 (c2"), e.Detail)
}

// TestAnswerMembersAreQuotedNowhere: an answer that names a member twice, under a name that
// looks like a secret, whatever the run makes of it: no error, status or line of crw.log quotes
// the name.
func TestAnswerMembersAreQuotedNowhere(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-MEMBER-0b77"
	svc, _ := enginetest.LocalService(t)
	root := t.TempDir()
	wf := filepath.Join(root, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";

export default async function main() {
  const r = await agent.call({ role: "explorer", node: "key", prompt: "the key", schema: {
    type: "object", properties: { "`+secret+`": { type: ["string", "integer"] } },
    required: ["`+secret+`"], additionalProperties: false } });
  return r.status;
}
`), 0o644))
	answers := filepath.Join(root, "answers.json")
	text, _ := json.Marshal(`{"` + secret + `":"x","` + secret + `":1}`)
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [{"match": {"node": "key"}, "turns": [{"text": `+string(text)+`}, {"text": `+string(text)+`}]}]}`), 0o644))
	ctx := context.Background()
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, BackendOpts: map[string]string{"answers": answers}})
	require.NoError(t, err)
	res, err := svc.Execute(ctx, id, engine.ExecOptions{})
	if err != nil {
		e, _ := errs.As(err)
		shown, _ := json.Marshal(e)
		noSecret(t, "the error", shown, secret)
		noSecret(t, "the error's text", []byte(err.Error()), secret)
	} else {
		end, _ := json.Marshal(res.Error)
		noSecret(t, "the run's error", end, secret)
	}
	st, err := svc.Status(ctx, id)
	require.NoError(t, err)
	published, _ := json.Marshal(st.Error)
	noSecret(t, "the run's status", published, secret)
	noSecret(t, "crw.log", runLog(t, svc, id), secret)
}
