package journal_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/journal"
)

func TestUnescapeHTMLKeepsTheValue(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"a":"\u003cb\u003e \u0026 c"}`: `{"a":"<b> & c"}`,
		`"\\u003c"`:                      `"\\u003c"`,
		`"\\\u003c"`:                     `"\\<"`,
		`"\u00e9\n\u003C"`:               `"\u00e9\n<"`,
		`"plain"`:                        `"plain"`,
		`"\`:                             `"\`,
	} {
		got := string(journal.UnescapeHTML([]byte(in)))
		assert.Equal(t, want, got, in)
		var a, b any
		if json.Unmarshal([]byte(in), &a) == nil {
			assert.NoError(t, json.Unmarshal([]byte(got), &b), in)
			assert.Equal(t, a, b, "the same value: %s", in)
		}
	}
}

func TestSameJSONIsTheSameValueWhateverTheHTMLEscaping(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{`{"a": "x < y"}`, `{"a":"x \u003c y"}`, true},
		{`["&", ">", "\u2028", "\u2029"]`, `["\u0026","\u003e","` + "\u2028" + `","` + "\u2029" + `"]`, true},
		{`{"a": 1, "b": 2}`, `{"a":1,"b":2}`, true},
		{`{"a": "x < y"}`, `{"a":"x > y"}`, false},
		{`{"a": 1, "b": 2}`, `{"b":2,"a":1}`, false}, // members in another order
		{`"\\u003c"`, `"<"`, false},                  // a backslash, then u003c
		{`{"a": "x"}`, `{"a": "x"`, false},           // not JSON
	} {
		assert.Equal(t, c.same, journal.SameJSON(json.RawMessage(c.a), json.RawMessage(c.b)), "%s and %s", c.a, c.b)
	}
}
