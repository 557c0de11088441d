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
