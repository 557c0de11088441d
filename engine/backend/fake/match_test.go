package fake_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/errs"
)

// TestMatchByPromptAndNthCall: prompt, prompt_regex, node_call and role_call each select the
// calls they name, every field of a match must hold, and the first entry that holds wins.
func TestMatchByPromptAndNthCall(t *testing.T) {
	t.Parallel()
	a := answers(t, `{"answers": [
		{"match": {"role": "reviewer", "node_call": 2, "prompt": "security"}, "turns": [{"text": "security round 2"}]},
		{"match": {"prompt": "security"}, "turns": [{"text": "security"}]},
		{"match": {"prompt_regex": "^Review (style|tests)\\b"}, "turns": [{"text": "style or tests"}]},
		{"match": {"role": "executor", "role_call": 3}, "turns": [{"text": "third executor call"}]},
		{"match": {"node_call": 1, "node": "fix"}, "turns": [{"text": "first fix"}]}
	]}`)
	for _, c := range []struct {
		name string
		q    fake.Query
		want string // "" when no entry matches
	}{
		{"substring", fake.Query{Role: "reviewer", Node: "sec", NodeCall: 1, Prompt: "Review security of x"}, "security"},
		{"every field holds", fake.Query{Role: "reviewer", Node: "sec", NodeCall: 2, Prompt: "Review security of x"}, "security round 2"},
		{"one field fails", fake.Query{Role: "critic", Node: "sec", NodeCall: 2, Prompt: "Review security of x"}, "security"},
		{"case counts", fake.Query{Role: "reviewer", Prompt: "Review Security"}, ""},
		{"regex", fake.Query{Role: "reviewer", Prompt: "Review tests of x"}, "style or tests"},
		{"regex anchored", fake.Query{Role: "reviewer", Prompt: "Please Review tests"}, ""},
		{"regex word boundary", fake.Query{Role: "reviewer", Prompt: "Review testsuite"}, ""},
		{"role_call", fake.Query{Role: "executor", RoleCall: 3, NodeCall: 1, Node: "build"}, "third executor call"},
		{"role_call other", fake.Query{Role: "executor", RoleCall: 2, NodeCall: 1, Node: "build"}, ""},
		{"node_call", fake.Query{Role: "executor", RoleCall: 4, NodeCall: 1, Node: "fix"}, "first fix"},
		{"node_call other", fake.Query{Role: "executor", RoleCall: 5, NodeCall: 2, Node: "fix"}, ""},
	} {
		turn := a.Find(c.q, 1)
		got := ""
		if turn != nil {
			got = *turn.Text
		}
		assert.Equal(t, c.want, got, c.name)
	}
}

// TestRepairTurnMatchesByTheTask: the repair turn's prompt is the repair instruction, yet it
// takes the second turn of the entry its task matched.
func TestRepairTurnMatchesByTheTask(t *testing.T) {
	t.Parallel()
	b := fake.New(answers(t, `{"answers": [
		{"match": {"prompt": "count the files"}, "turns": [{"text": "about five"}, {"text": "5"}]},
		{"match": {}, "turns": [{"text": "other"}, {"text": "other repaired"}]}
	]}`), nil)
	ctx := context.Background()
	task := backend.Turn{Call: call, K: 1, Prompt: "count the files", Task: "count the files"}
	out := b.Run(ctx, task, &recorder{})
	assert.Equal(t, "about five", out.Text)
	out = b.Run(ctx, backend.Turn{Call: call, K: 2, Prompt: "Your previous answer could not be accepted", Task: "count the files",
		Thread: backend.Thread{ID: "fake-c1"}}, &recorder{})
	assert.Equal(t, "5", out.Text)
}

// TestMatchFieldsAreRefusedNamingEntryAndField: bad values and wrong JSON types of the match
// fields are errors naming the entry and the field, never a panic.
func TestMatchFieldsAreRefusedNamingEntryAndField(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", fake.MaxPromptRegex+1)
	for _, c := range []struct{ match, want string }{
		{`{"prompt_regex": "(unclosed"}`, "answers.json: answers[1].match.prompt_regex: not a Go regular expression: error parsing regexp: missing closing ): `(unclosed`"},
		{`{"prompt_regex": "a(?=b)"}`, "answers.json: answers[1].match.prompt_regex: not a Go regular expression: error parsing regexp: invalid or unsupported Perl syntax: `(?=`"},
		{`{"prompt_regex": "` + long + `"}`, "answers.json: answers[1].match.prompt_regex: is 4097 bytes long; the limit is 4096"},
		{`{"prompt_regex": 7}`, "answers.json: answers[1].match.prompt_regex: must be a string, not a JSON number"},
		{`{"prompt": ["a"]}`, "answers.json: answers[1].match.prompt: must be a string, not a JSON array"},
		{`{"prompt": null, "node_call": 0}`, "answers.json: answers[1].match.node_call: must be 1 or more (the nth call of the call's node, in the order the script issued them), got 0"},
		{`{"role_call": -1}`, "answers.json: answers[1].match.role_call: must be 1 or more (the nth call of the call's role, in the order the script issued them), got -1"},
		{`{"call": 0}`, "answers.json: answers[1].match.call: must be 1 or more (the order in which the script issued the call), got 0"},
		{`{"node_call": "2"}`, "answers.json: answers[1].match.node_call: must be a whole number, not a JSON string"},
		{`{"role_call": 2.5}`, "answers.json: answers[1].match.role_call: must be a whole number, not a JSON number 2.5"},
		{`{"role_call": 1e30}`, "answers.json: answers[1].match.role_call: must be a whole number, not a JSON number 1e30"},
		{`{"role_call": true}`, "answers.json: answers[1].match.role_call: must be a whole number, not a JSON bool"},
		{`"reviewer"`, "answers.json: answers[1].match: must be an object, not a JSON string"},
		{`{"nodecall": 1}`, `answers.json: answers[1].match: json: unknown field "nodecall" (match takes role, node, call, node_call, role_call, prompt and prompt_regex)`},
	} {
		_, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [{"turns": []}, {"match": `+c.match+`, "turns": []}]}`))
		require.Error(t, err, c.match)
		assert.Equal(t, c.want, err.Error(), c.match)
	}

	// A run created with such a file is refused as bad input, the answers option's error.
	path := filepath.Join(t.TempDir(), "answers.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"answers": [{"match": {"prompt_regex": "a**"}, "turns": []}]}`), 0o600))
	_, err := fake.Descriptor().Prepare(map[string]string{"answers": path})
	require.Error(t, err)
	assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err))
	assert.Contains(t, err.Error(), "answers[0].match.prompt_regex: not a Go regular expression: error parsing regexp: invalid nested repetition operator: `**`")
}
