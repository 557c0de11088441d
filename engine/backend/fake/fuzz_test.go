package fake_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/crw-dev/crw/engine/backend/fake"
)

// FuzzParseAnswers: any content ends in answers or in a FileError naming the file; answers
// accepted are written back and read again unchanged.
func FuzzParseAnswers(f *testing.F) {
	for _, s := range []string{
		`{"answers": [{"match": {"role": "planner", "node": "a", "call": 2}, "turns": [{"json": {"v": 1}, "tokens": {"input": 3, "output": 1}}, {"text": "x", "delay_ms": 5}]}]}`,
		`{"answers": [{"turns": [{"error": "usageLimitExceeded"}, {"lost": true}]}]}`,
		`{"answers": [{"turns": [{"json": {"v": 1}, "text": "both"}]}]}`,
		`{"answers": [{"match": {"call": 0}, "turns": []}]}`,
		`{"answers": [{"match": {"role": "reviewer", "node_call": 2, "role_call": 5, "prompt": "security", "prompt_regex": "^Review (a|b)\\b"}, "turns": [{"text": "x"}]}]}`,
		`{"answers": [{"match": {"prompt_regex": "(a"}, "turns": []}]}`,
		`{"answers": [{"match": {"prompt_regex": "a{1001}"}, "turns": []}]}`,
		`{"answers": [{"match": {"node_call": 0}, "turns": []}]}`,
		`{"answers": [{"match": {"role_call": -3}, "turns": []}]}`,
		`{"answers": [{"match": {"node_call": "1", "prompt": 5}, "turns": []}]}`,
		`{"answers": [{"match": {"role_call": 1e99}, "turns": []}]}`,
		`{"answers": [{"match": "reviewer", "turns": []}]}`,
		`{"answers": [{"turns": [{"delay_ms": -1, "lost": true}]}]}`,
		`{"answers": null}`,
		`{"answers": []} []`,
		`{"other": 1}`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := fake.ParseAnswers("answers.json", data)
		if err != nil {
			var fe *fake.FileError
			if !errors.As(err, &fe) || fe.File != "answers.json" {
				t.Fatalf("not a FileError naming the file: %#v", err)
			}
			return
		}
		// Matching never panics, whatever the file holds.
		q := fake.Query{Call: 1, NodeCall: 2, RoleCall: 3, Role: "reviewer", Node: "a", Prompt: "Review a"}
		for k := 1; k <= 2; k++ {
			a.Find(q, k)
		}
		once, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("accepted answers do not encode: %v", err)
		}
		b, err := fake.ParseAnswers("again.json", once)
		if err != nil {
			t.Fatalf("%s does not read back: %v", once, err)
		}
		twice, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once, twice) {
			t.Fatalf("answers changed when read back:\n%s\n%s", once, twice)
		}
	})
}
