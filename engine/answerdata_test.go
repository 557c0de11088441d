package engine_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// nestedSchema takes {"v": an array of arrays of ..., any depth}.
const nestedSchema = `{ type: "object", additionalProperties: false, required: ["v"], properties: { v: { $ref: "#/$defs/n" } },
  $defs: { n: { type: "array", items: { $ref: "#/$defs/n" } } } }`

// depthWorkflow returns how deeply the answer's v nests, as the script sees it.
const depthWorkflow = `import { agent } from "crw:agent";
const S = ` + nestedSchema + `;
export default async function main() {
  const r = await agent.call({ role: "explorer", node: "deep", prompt: "p", schema: S });
  let d = 0;
  for (let v = r.output && r.output.v; Array.isArray(v); v = v[0]) d++;
  return { status: r.status, reason: r.reason, arrays: d };
}
`

func nestedArrays(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// TestAnswerDataDepth: an answer that nests as deeply as schema.MaxDataDepth allows (256
// levels, the object being the first) is validated and delivered; one level more is invalid
// and gets the repair turn.
func TestAnswerDataDepth(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		arrays int
		want   string
	}{
		{255, `{"status":"completed","reason":null,"arrays":255}`},
		{256, `{"status":"null_model","reason":"schema_invalid_after_repair","arrays":0}`},
	} {
		text, _ := json.Marshal(`{"v":` + nestedArrays(c.arrays) + `}`)
		st, rows := enginetest.Run(t, depthWorkflow, answers(`{"turns":[{"text":`+string(text)+`},{"text":`+string(text)+`}]}`))
		assert.JSONEq(t, c.want, string(st.Result), "%d arrays", c.arrays)
		if c.arrays == 256 {
			assert.Equal(t, 2, enginetest.Count(rows, "c1", journal.TypeTurnStarted))
		}
	}
}

// pausedWorkflow makes call c1 (answered {"v": ...}), then call c2, which a usage limit holds:
// the run pauses with c1's completed row in its journal.
const pausedWorkflow = `import { agent } from "crw:agent";
const S = { type: "object", additionalProperties: false, required: ["v"], properties: { v: { anyOf: [ { type: "string" }, { type: "integer" }, { $ref: "#/$defs/n" } ] } },
  $defs: { n: { type: "array", items: { $ref: "#/$defs/n" } } } };
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "first", schema: S });
  const b = await agent.call({ role: "explorer", node: "b", prompt: "second" });
  let d = 0;
  for (let v = a.output.v; Array.isArray(v); v = v[0]) d++;
  return { v: Array.isArray(a.output.v) ? d : a.output.v, keys: Object.keys(a.output), b: b.status };
}
`

// pausedRun runs pausedWorkflow until it pauses and returns the run, its service and the seq
// of c1's completed row.
func pausedRun(t *testing.T) (*engine.Service, string, uint64) {
	t.Helper()
	svc, _ := enginetest.LocalService(t)
	dir := t.TempDir()
	wfPath := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wfPath, []byte(pausedWorkflow), 0o644))
	paused, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [
  {"match": {"node": "a"}, "turns": [{"text": "{\"v\":\"x\"}"}]},
  {"match": {"node": "b"}, "turns": [{"error": "usageLimitExceeded"}]}
]}`))
	require.NoError(t, err)
	ctx := context.Background()
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wfPath})
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(paused, fake.NewHost(""))})
	require.NoError(t, err)
	require.Equal(t, store.RunPaused, end.Status)
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	return svc, id, enginetest.Terminal(t, rows, "c1").Seq
}

// tamperOutput replaces the output of the row at seq in the run's journal file, with bbolt
// directly, as a hostile program might: it recomputes the row's checksum (its last 4 bytes, the
// CRC-32C of its JSON, docs/journal.md), so the row reads as undamaged.
func tamperOutput(t *testing.T, svc *engine.Service, id string, seq uint64, output string) {
	t.Helper()
	db, err := bbolt.Open(enginetest.JournalPath(svc, id), 0o600, &bbolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("rows"))
		key := binary.BigEndian.AppendUint64(nil, seq)
		stored := b.Get(key)
		var row map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(stored[:len(stored)-4], &row))
		require.JSONEq(t, `{"v":"x"}`, string(row["output"]))
		data, err := json.Marshal(row)
		require.NoError(t, err)
		// Marshal would compact and check the output: put it in as written.
		data = []byte(strings.Replace(string(data), `"output":{"v":"x"}`, `"output":`+output, 1))
		return b.Put(key, binary.BigEndian.AppendUint32(data, crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))))
	}))
}

// TestAJournaledAnswerIsAlwaysDelivered: a completed row whose output repeats a member name,
// or nests deeper than answers may but within what a CallResult can hold, is delivered on
// resume as JSON.parse would read it (the last value wins).
func TestAJournaledAnswerIsAlwaysDelivered(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ output, want string }{
		{`{"v":"x","v":1}`, `{"v":1,"keys":["v"],"b":"completed"}`},
		{`{"v":"x","\ud800":1,"\udbff":2}`, `{"v":"x","keys":["v","\ufffd"],"b":"completed"}`},
		{`{"v":` + nestedArrays(300) + `}`, `{"v":300,"keys":["v"],"b":"completed"}`},
		// result.MaxOutputDepth: the object and 511 arrays.
		{`{"v":` + nestedArrays(511) + `}`, `{"v":511,"keys":["v"],"b":"completed"}`},
	} {
		svc, id, seq := pausedRun(t)
		tamperOutput(t, svc, id, seq, c.output)
		st, err := svc.Execute(context.Background(), id, engine.ExecOptions{})
		require.NoError(t, err, "%s", c.output)
		assert.Equal(t, store.RunCompleted, st.Status)
		assert.JSONEq(t, c.want, string(st.Result), "%s", c.output)
	}
}

// TestAJournaledAnswerTooDeepToDeliver: a completed row whose output nests beyond what a
// CallResult can hold ends the resume with a clear error, the same on every resume, and
// nothing is written.
func TestAJournaledAnswerTooDeepToDeliver(t *testing.T) {
	t.Parallel()
	svc, id, seq := pausedRun(t)
	tamperOutput(t, svc, id, seq, `{"v":`+nestedArrays(512)+`}`)
	ctx := context.Background()
	before, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	for range 2 {
		_, err := svc.Execute(ctx, id, engine.ExecOptions{})
		require.Error(t, err)
		assert.Equal(t, errs.IncompatibleSchema, errs.CodeOf(err), "%v", err)
		assert.ErrorContains(t, err, "of call c1 has an output nested more than 512 levels deep")
	}
	after, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, len(before), len(after))
}

// cyclicSchema's $defs loop through no properties or items: no value can satisfy it, and
// validating against it would never end.
const cyclicSchema = `{ type: "object", additionalProperties: false, required: ["a"], properties: { a: { $ref: "#/$defs/x" } },
  $defs: { x: { anyOf: [ { $ref: "#/$defs/x" }, { type: "null" } ] } } }`

// TestARefCycleIsNotStrict: a call with a $ref cycle is refused before anything is sent, and
// a schema module exporting one does not load.
func TestARefCycleIsNotStrict(t *testing.T) {
	t.Parallel()
	st, rows := enginetest.Run(t, `import { agent } from "crw:agent";
export default async function main() {
  const r = await agent.call({ role: "explorer", prompt: "p", schema: `+cyclicSchema+` });
  return [r.status, r.reason];
}
`, "")
	assert.JSONEq(t, `["refused","schema_not_strict"]`, string(st.Result))
	assert.Contains(t, enginetest.Terminal(t, rows, "c1").Detail, "/$defs/x/anyOf/0/$ref: ref_cycle: the $ref cycle #/$defs/x → #/$defs/x")
	assert.Zero(t, enginetest.Count(rows, "c1", journal.TypeTurnStarted))

	out := enginetest.Start(t, "import { loop } from \"crw:lib/schemas/extra\";\nexport default () => loop;\n", "",
		enginetest.File("lib/schemas/extra.js", "export const loop = "+cyclicSchema+";\n"))
	assert.Equal(t, errs.InvalidRequest, errs.CodeOf(out.Err), "%v", out.Err)
	assert.ErrorContains(t, out.Err, "ref_cycle")
}

// TestAnswerNumbersBeyondFloat64: numbers are validated as written and reach the script as
// JavaScript numbers: a big integer rounded, a number beyond float64's range as Infinity, one
// below its smallest as 0. The journal keeps them as written.
func TestAnswerNumbersBeyondFloat64(t *testing.T) {
	t.Parallel()
	const answer = `{"big":12345678901234567891,"huge":2e309,"tiny":1e-400,"neg":-2e309}`
	st, rows := enginetest.Run(t, `import { agent } from "crw:agent";
const N = { type: "number" };
const S = { type: "object", additionalProperties: false, required: ["big", "huge", "tiny", "neg"],
  properties: { big: { type: "integer", maximum: 2e19 }, huge: N, tiny: N, neg: N } };
export default async function main() {
  const r = await agent.call({ role: "explorer", prompt: "p", schema: S });
  const o = r.output;
  return [r.status, String(o.big), String(o.huge), String(o.tiny), String(o.neg), r.meta.repairUsed];
}
`, answers(`{"turns":[{"text":`+quote(answer)+`}]}`))
	assert.JSONEq(t, `["completed","12345678901234567000","Infinity","0","-Infinity",false]`, string(st.Result))
	assert.Equal(t, answer, string(enginetest.Terminal(t, rows, "c1").Output))
}
