package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestDigest(t *testing.T) {
	same := [][]string{
		{`{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}`,
			"{\n  \"properties\": {\"a\": {\"type\": \"string\"}},\n  \"required\": [\"a\"],\n  \"type\": \"object\"\n}\n"},
		{`[1, 1.0, 1e0, 10E-1]`, `[1,1,1,1]`},
		{`{"n":-0}`, `{"n":0}`},
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`{"s":"\u003c\u00e9"}`, `{"s":"<é"}`},
		{`{"n":1e400}`, `{"n":1e400}`},
	}
	for _, pair := range same {
		if a, b := Digest([]byte(pair[0])), Digest([]byte(pair[1])); a != b {
			t.Errorf("%s and %s differ: %s, %s", pair[0], pair[1], a, b)
		}
	}
	different := [][]string{
		{`{"a":1}`, `{"a":"1"}`},
		{`[1,2]`, `[2,1]`},
		{`{"a":null}`, `{}`},
		{`{"a":1.5}`, `{"a":1}`},
	}
	for _, pair := range different {
		if Digest([]byte(pair[0])) == Digest([]byte(pair[1])) {
			t.Errorf("%s and %s have one digest", pair[0], pair[1])
		}
	}

	// The canonical text of {} is {}; data that is not JSON is digested as it is.
	sum := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return "sha256:" + hex.EncodeToString(h[:])
	}
	if got, want := Digest([]byte(" { } ")), sum("{}"); got != want {
		t.Errorf("Digest({}) = %s, want %s", got, want)
	}
	if got, want := Digest([]byte(`{"b":[true,null],"a":"x"}`)), sum(`{"a":"x","b":[true,null]}`); got != want {
		t.Errorf("canonical text differs: %s, want %s", got, want)
	}
	for _, raw := range []string{"not json", `{"a":1} {}`, ""} {
		if got, want := Digest([]byte(raw)), sum(raw); got != want {
			t.Errorf("Digest(%q) = %s, want %s", raw, got, want)
		}
	}
	if d := Digest([]byte(`{}`)); !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 {
		t.Errorf("Digest format: %s", d)
	}
}
