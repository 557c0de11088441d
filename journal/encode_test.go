package journal_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
)

// TestEncodeIsEncodingJSON: a row encodes to the very bytes encoding/json makes of it, every
// field set, and strings a hostile workflow may put in a prompt or an answer (HTML's
// characters, control characters, invalid UTF-8, the line separators JSON allows and
// JavaScript did not).
func TestEncodeIsEncodingJSON(t *testing.T) {
	full := reflect.New(reflect.TypeOf(journal.Row{})).Elem()
	n := 0
	filled(t, full, "Row", &n)
	hostile := "<script>&amp;</script> \x00\x01\x1f\x7f \u2028\u2029 é 🙂 \xff\xfe bad \"quoted\" back\\slash"
	rows := []*journal.Row{
		full.Addr().Interface().(*journal.Row),
		{Seq: 7, Type: journal.TypePrepared, Call: "c3", Prompt: hostile, Role: hostile, Output: json.RawMessage(`{"a":"<b>"}`)},
		journal.Warning{Reason: "r", Detail: hostile}.Row(),
		{},
	}
	for i, r := range rows {
		want, err := json.Marshal(r)
		require.NoError(t, err)
		got, err := journal.Encode(r)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "row %d", i)
	}
}
