package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJSONFlag(t *testing.T) {
	t.Parallel()
	var j jsonFlag
	require.NoError(t, j.Set("true"))
	assert.Equal(t, jsonFlag{on: true}, j)
	require.NoError(t, j.Set("run, status,run"))
	assert.Equal(t, jsonFlag{on: true, fields: []string{"run", "status"}}, j)
	assert.Equal(t, "run,status", j.String())
	require.NoError(t, j.Set("false"))
	assert.Equal(t, jsonFlag{}, j)
	assert.EqualError(t, j.Set("run,"), `"" is not a field name (--json=FIELD,FIELD…)`)
	assert.EqualError(t, j.Set("calls.c1"), `"calls.c1" is not a field name (--json=FIELD,FIELD…)`)
}

// filtered is what f makes of the lines written to it, in two writes that cut a line.
func filtered(t *testing.T, f *jsonFilter, out string) (string, error) {
	t.Helper()
	var b bytes.Buffer
	f.w, f.seen = &b, map[string]bool{}
	half := len(out) / 2
	_, err := f.Write([]byte(out[:half]))
	require.NoError(t, err)
	_, err = f.Write([]byte(out[half:]))
	require.NoError(t, err)
	err = f.done()
	return b.String(), err
}

func TestJSONFilterKeepsTheFieldsNamed(t *testing.T) {
	t.Parallel()
	got, err := filtered(t, &jsonFilter{fields: []string{"status", "run", "decisions"}},
		`{"run":"r1","state":"ended","status":"completed","n":12345678901234567890}`+"\n"+`{"run":"r2","status":"failed","x":"<&>"}`+"\n")
	require.NoError(t, err)
	// In the order named; absent (empty this time) is null.
	assert.Equal(t, `{"status":"completed","run":"r1","decisions":null}`+"\n"+`{"status":"failed","run":"r2","decisions":null}`+"\n", got)

	// A slip for a field the first object has: nothing is written but the error, even of the
	// lines after it.
	got, err = filtered(t, &jsonFilter{fields: []string{"run", "stauts"}}, `{"run":"r1","state":"ended","status":"completed"}`+"\n"+`{"run":"r2"}`+"\n")
	assert.Empty(t, got)
	assert.EqualError(t, err, `invalid_request: --json: the output has no field "stauts"; did you mean state or status? (its fields: run, state, status)`)
}

func TestJSONFilterQueries(t *testing.T) {
	t.Parallel()
	code, err := compileJQ(`.calls[] | select(.status == "completed") | .call`)
	require.NoError(t, err)
	got, err := filtered(t, &jsonFilter{query: code},
		`{"calls":[{"call":"c1","status":"completed"},{"call":"c2","status":"held"},{"call":"c3","status":"completed"}]}`+"\n")
	require.NoError(t, err)
	assert.Equal(t, "c1\nc3\n", got, "strings as they are, one a line")

	code, err = compileJQ(`{n: .n, big: .big, s: "<&>"}`)
	require.NoError(t, err)
	got, err = filtered(t, &jsonFilter{query: code}, `{"n":1.5,"big":12345678901234567890}`+"\n")
	require.NoError(t, err)
	assert.Equal(t, `{"big":12345678901234567890,"n":1.5,"s":"<&>"}`+"\n", got, "numbers exact, <&> unescaped as every command writes them")

	// Fields first, then the query; JSON Lines a line at a time.
	code, err = compileJQ(`.seq`)
	require.NoError(t, err)
	got, err = filtered(t, &jsonFilter{fields: []string{"seq"}, query: code}, `{"seq":1,"type":"a"}`+"\n"+`{"seq":2,"type":"b"}`+"\n")
	require.NoError(t, err)
	assert.Equal(t, "1\n2\n", got)

	code, err = compileJQ(`.a.b`)
	require.NoError(t, err)
	_, err = filtered(t, &jsonFilter{query: code}, `{"a":"text"}`+"\n")
	assert.EqualError(t, err, `invalid_request: --jq: expected an object but got: string ("text")`)

	_, err = compileJQ(`.[`)
	assert.EqualError(t, err, "invalid_request: --jq .[: unexpected EOF")
}

func TestJSONFilterPassesWhatIsNotJSON(t *testing.T) {
	t.Parallel()
	got, err := filtered(t, &jsonFilter{fields: []string{"run"}}, "<html>\n</html>")
	require.NoError(t, err)
	assert.Equal(t, "<html>\n</html>\n", got)

	got, err = filtered(t, &jsonFilter{fields: []string{"run"}, raw: true}, `{"run":"r","error":{}}`+"\n")
	require.NoError(t, err)
	assert.Equal(t, `{"run":"r","error":{}}`+"\n", got, "an error is printed whole")
}
