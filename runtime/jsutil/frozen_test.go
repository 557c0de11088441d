package jsutil

import (
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/require"
)

// The frozen parser gives what JSON.parse gives, deeply frozen.
func TestFrozenParserMatchesJSONParse(t *testing.T) {
	docs := []string{
		sampleResult,
		`null`, `true`, `false`, `0`, `-0`, `-12`, `3.25`, `1e3`, `12345678901234567890`, `9007199254740993`,
		`""`, `"a\"b\\c\n\u00e9\ud83d\ude00/"`, `"héllo"`,
		`[]`, `{}`, `[1,[2,[3,{}]]]`, `{"b":1,"a":2,"10":3,"2":4}`,
		` { "x" : [ 1 , "y" , null ] , "z" : { } } `,
	}
	rt := goja.New()
	parse := FrozenParser(Capture(rt))
	check, err := rt.RunString(`(function check(a, b) {
		if (JSON.stringify(a) !== JSON.stringify(b)) return "differs: " + JSON.stringify(a) + " vs " + JSON.stringify(b);
		const frozen = (v) => v === null || typeof v !== "object" || (Object.isFrozen(v) && Object.keys(v).every((k) => frozen(v[k])));
		if (!frozen(a)) return "not deeply frozen";
		if (Array.isArray(a) !== Array.isArray(b)) return "array-ness differs";
		if (typeof a === "number" && !Object.is(a, b)) return "number differs";
		return "";
	})`)
	require.NoError(t, err)
	checkFn, _ := goja.AssertFunction(check)
	for _, doc := range docs {
		got, err := parse([]byte(doc))
		require.NoError(t, err, doc)
		want, err := Capture(rt).Parse([]byte(doc))
		require.NoError(t, err, doc)
		msg, err := checkFn(goja.Undefined(), got, want)
		require.NoError(t, err)
		require.Equal(t, "", msg.String(), doc)
	}
}

func TestFrozenParserRejectsBadJSON(t *testing.T) {
	rt := goja.New()
	parse := FrozenParser(Capture(rt))
	for _, doc := range []string{`{`, `[1,]`, `{"a" 1}`, `"open`, `tru`, `1 2`, `{"a":1}x`, `-`, `[`} {
		_, err := parse([]byte(doc))
		require.Error(t, err, doc)
	}
}
