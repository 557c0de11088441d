package engine_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/engine/schema/jsts"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store"
)

// jstsWorkflow makes one agent.call per case, all at once, each with its group's schema, and
// returns how each ended.
const jstsWorkflow = `import { agent } from "crw:agent";
export default async function main(input) {
  const calls = [];
  for (const g of input.groups)
    for (let i = 0; i < g.cases; i++)
      calls.push(agent.call({ role: "explorer", node: "jsts", prompt: "answer", schema: g.schema }));
  return (await Promise.all(calls)).map((r) => r.status === "completed" ? "valid" : r.status + "/" + r.reason);
}
`

// TestJSONSchemaTestSuiteThroughAgentCall runs the official JSON-Schema-Test-Suite (draft
// 2020-12, upstream 44401e0, engine/schema/testdata/jsts) through agent.call on the fake
// backend: each kept group's wrapped schema is a call's schema and each case is answered
// {"v": DATA}, numbers as the suite writes them, for the task and the repair turn. A valid case
// ends completed, an invalid one null_model / schema_invalid_after_repair, except the documented
// differences (jsts.Differences), which end the other way.
func TestJSONSchemaTestSuiteThroughAgentCall(t *testing.T) {
	t.Parallel()
	groups, err := jsts.Load("schema/testdata/jsts")
	require.NoError(t, err)
	type inputGroup struct {
		Schema json.RawMessage `json:"schema"`
		Cases  int             `json:"cases"`
	}
	var input struct {
		Groups []inputGroup `json:"groups"`
	}
	type entry struct {
		Match map[string]int      `json:"match"`
		Turns []map[string]string `json:"turns"`
	}
	var file struct {
		Answers []entry `json:"answers"`
	}
	var want []string
	var keys []string
	for _, g := range groups {
		if vs, err := schema.CheckStrict(g.Schema); err != nil || len(vs) > 0 {
			continue
		}
		input.Groups = append(input.Groups, inputGroup{Schema: g.Schema, Cases: len(g.Cases)})
		for _, c := range g.Cases {
			turn := map[string]string{"text": c.Answer()}
			file.Answers = append(file.Answers, entry{Match: map[string]int{"call": len(want) + 1}, Turns: []map[string]string{turn, turn}})
			valid := c.Valid
			if _, differs := jsts.Differences[jsts.Key(g, c)]; differs {
				valid = !valid
			}
			if valid {
				want = append(want, "valid")
			} else {
				want = append(want, "null_model/schema_invalid_after_repair")
			}
			keys = append(keys, jsts.Key(g, c))
		}
	}
	require.Greater(t, len(input.Groups), 100)
	in, err := json.Marshal(input)
	require.NoError(t, err)
	answersFile, err := json.Marshal(file)
	require.NoError(t, err)

	st, _ := enginetest.Run(t, jstsWorkflow, string(answersFile), enginetest.Input(string(in)), enginetest.Pool(16))
	require.Equal(t, store.RunCompleted, st.Status, "%+v", st.Error)
	var got []string
	enginetest.Decode(t, st, &got)
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i], got[i], "call %d: %s", i+1, keys[i])
	}
	t.Logf("%d groups, %d cases through agent.call", len(input.Groups), len(want))
}
