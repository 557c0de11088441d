package jsonscan

import (
	"strings"
	"testing"
)

// events records what a Builder gets.
type events []string

func (e *events) Open(obj bool) {
	if obj {
		*e = append(*e, "{")
	} else {
		*e = append(*e, "[")
	}
}
func (e *events) Key(name string) { *e = append(*e, "key "+name) }
func (e *events) Scalar(kind Kind, text string) {
	*e = append(*e, []string{"str", "num", "true", "false", "null"}[kind]+" "+text)
}
func (e *events) Close() { *e = append(*e, "close") }

func TestBuilderEvents(t *testing.T) {
	var got events
	sc := &Scanner{S: ` {"a":[1e400,"x\u00e9",true,false,null],"b":{}} tail`, Build: &got}
	end, err := sc.Value(0)
	if err != nil || end != 47 {
		t.Fatalf("end %d, %v", end, err)
	}
	want := "{|key a|[|num 1e400|str xé|true |false |null |close|key b|{|close|close"
	if strings.Join(got, "|") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, "|"), want)
	}
}

// With Memoize, an object read once is not read again from another start: each '{' of
// the text is tried as a start, and the bytes examined stay a few per byte.
func TestMemoize(t *testing.T) {
	s := "x " + strings.Repeat(`{"a":`, 2000) + "\n```"
	for _, memo := range []bool{true, false} {
		sc := &Scanner{S: s, Memoize: memo}
		for i := range s {
			if s[i] == '{' {
				if _, err := sc.Value(i); err == nil || err.EOF {
					t.Fatalf("from %d: %v, want a syntax error", i, err)
				}
			}
		}
		switch {
		case memo && sc.Steps > 2*len(s):
			t.Errorf("memoized: %d steps for %d bytes", sc.Steps, len(s))
		case !memo && sc.Steps < 500*len(s):
			t.Errorf("not memoized: %d steps for %d bytes; the test no longer shows what the memo saves", sc.Steps, len(s))
		}
	}
}

// With KeepSpaces, Compact writes the value read as json.Compact does: the whitespace
// between tokens left out, that inside strings kept.
func TestCompact(t *testing.T) {
	cases := map[string]string{
		` {"a" : [1, "x y" ,{ } ,[ ]] , "b":"\" }"} tail`: `{"a":[1,"x y",{},[]],"b":"\" }"}`,
		"\n[\n\t1,\r\n\t2\n]":                             `[1,2]`,
		`{"a":1}`:                                         `{"a":1}`,
		` "a b" `:                                         `"a b"`,
	}
	for text, want := range cases {
		sc := &Scanner{S: text, KeepSpaces: true}
		end, err := sc.Value(0)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		start := len(text) - len(strings.TrimLeft(text, " \t\r\n"))
		if got := sc.Compact(start, end); got != want {
			t.Errorf("%q: Compact = %q, want %q", text, got, want)
		}
	}
}
