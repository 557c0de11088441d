package check

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/store"
)

func TestResultDifferenceNamesTheFirstPathThatDiffers(t *testing.T) {
	t.Parallel()
	end := func(result string) *store.Status {
		return &store.Status{Status: "completed", Result: json.RawMessage(result)}
	}
	for _, tc := range []struct {
		crashed, base      string
		at, after, without string
	}{
		{`{"a":1,"b":{"c":[1,2,{"d":"x"}]}}`, `{"a":1,"b":{"c":[1,2,{"d":"y"}]}}`, `.b.c[2].d`, `"x"`, `"y"`},
		{`{"b":1,"a":2}`, `{"b":2,"a":3}`, `.a`, `2`, `3`},
		{`{"x":null}`, `{}`, `.x`, `null`, `(absent)`},
		{`{}`, `{"odd key":true}`, `["odd key"]`, `(absent)`, `true`},
		{`[1,2]`, `[1,2,3]`, `(the result)`, `[1,2]`, `[1,2,3]`},
		{`{"a":[1]}`, `{"a":{"0":1}}`, `.a`, `[1]`, `{"0":1}`},
	} {
		at, after, without, ok := resultDifference(end(tc.crashed), end(tc.base))
		assert.True(t, ok, tc.crashed)
		assert.Equal(t, tc.at, at, tc.crashed)
		assert.Equal(t, tc.after, after, tc.crashed)
		assert.Equal(t, tc.without, without, tc.crashed)
	}
	_, _, _, ok := resultDifference(end(`{"a":[1,{"b":2}]}`), end(`{"a":[1,{"b":2}]}`))
	assert.False(t, ok, "equal results")
	_, _, _, ok = resultDifference(
		end(`{"plan":{"callId":"c3","meta":{"threadId":"fake-c3","turnIds":["fake-c3-t1"]}}}`),
		end(`{"plan":{"callId":"c3","meta":{"threadId":"fake-c3-a2","turnIds":["fake-c3-a2-t1"]}}}`))
	assert.False(t, ok, "the generation in a fake id is the engine's")
	at, _, _, ok := resultDifference(
		end(`{"plan":{"callId":"c3","meta":{"threadId":"fake-c3"}},"note":"fake-c3-a2"}`),
		end(`{"plan":{"callId":"c3","meta":{"threadId":"fake-c4-a2"}},"note":"fake-c3-a2"}`))
	assert.True(t, ok)
	assert.Equal(t, ".plan.meta.threadId", at, "another call's thread differs")
	_, _, _, ok = resultDifference(&store.Status{Status: "failed"}, end(`1`))
	assert.False(t, ok, "a failed run has no result to compare")
}
