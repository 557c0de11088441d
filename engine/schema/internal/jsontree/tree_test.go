package jsontree

import (
	"errors"
	"testing"
)

// The tree parser's syntax errors say where, in encoding/json's words.
func TestParseJSONErrors(t *testing.T) {
	cases := map[string]string{
		"":                     "not a single JSON value: empty input",
		" \n ":                 "not a single JSON value: empty input",
		"{":                    "not a single JSON value: unexpected end of input",
		`{"a":1} {}`:           "not a single JSON value: data after the value (line 1, column 9)",
		"{\n  \"a\" 1}":        "not a single JSON value: invalid character '1' after object key (line 2, column 7)",
		`{"a":1,}`:             "not a single JSON value: invalid character '}' looking for beginning of object key string (line 1, column 8)",
		`[1,]`:                 "not a single JSON value: invalid character ']' looking for beginning of value (line 1, column 4)",
		`[1 2]`:                "not a single JSON value: invalid character '2' after array element (line 1, column 4)",
		`{"a":1 "b":2}`:        "not a single JSON value: invalid character '\"' after object key:value pair (line 1, column 8)",
		`[tru]`:                "not a single JSON value: invalid character ']' in literal true (expecting 'e') (line 1, column 5)",
		`[01]`:                 "not a single JSON value: invalid character '1' after array element (line 1, column 3)",
		`[1.]`:                 "not a single JSON value: invalid character ']' after decimal point in numeric literal (line 1, column 4)",
		`[1e+]`:                "not a single JSON value: invalid character ']' in exponent of numeric literal (line 1, column 5)",
		`[-]`:                  "not a single JSON value: invalid character ']' in numeric literal (line 1, column 3)",
		"[\"a\tb\"]":           "not a single JSON value: invalid character '\\t' in string literal (line 1, column 4)",
		`["\x"]`:               "not a single JSON value: invalid character 'x' in string escape code (line 1, column 4)",
		`["\u12G4"]`:           "not a single JSON value: invalid character 'G' in \\u hexadecimal character escape (line 1, column 7)",
		"[\"é\", \"\xff\", x]": "not a single JSON value: invalid character 'x' looking for beginning of value (line 1, column 12)",
	}
	for doc, want := range cases {
		_, _, err := Parse(doc)
		if err == nil || err.Error() != want || !errors.Is(err, ErrNotJSON) {
			t.Errorf("%q: %v, want %q", doc, err, want)
		}
	}
}

// The tree keeps what the document says: numbers as written, strings decoded as
// encoding/json decodes them, members in order, duplicates included.
func TestParseJSONTree(t *testing.T) {
	v, _, err := Parse(`{"n":[2e309,-0.5e-400,12345678901234567890],"s":"a\u00e9\ud83d\ude00\ud800\n","a":1,"a":true,"z":null}`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(AppendJSON(nil, v)), `{"n":[2e309,-0.5e-400,12345678901234567890],"s":"aé😀�\n","a":1,"a":true,"z":null}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := v.Get("a"); got == nil || got.Kind != KindBool {
		t.Errorf("get(a) = %v, want the last member", got)
	}
}
