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
