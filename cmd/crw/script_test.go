package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/crw-dev/crw/cmd/crw/internal/cli"
)

// TestMain makes the test binary double as crw, so scripts run the real command in a
// subprocess with `exec crw …`.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"crw": func() { os.Exit(cli.Main()) },
	})
}

// TestScript runs every testdata/script/*.txtar. CRW_UPDATE=1 rewrites the golden sections of
// the archives whose cmp fails.
func TestScript(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join(repo, "testdata", "script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       update(),
		Setup: func(e *testscript.Env) error {
			e.Setenv("REPO", repo)
			e.Setenv("CRW_STATE", filepath.Join(e.WorkDir, "state"))
			e.Setenv("HOME", filepath.Join(e.WorkDir, "home"))
			e.Setenv("XDG_STATE_HOME", "")
			// Under -race every crw process sleeps a second at exit unless told otherwise.
			if gorace := e.Getenv("GORACE"); !strings.Contains(gorace, "atexit_sleep_ms") {
				e.Setenv("GORACE", strings.TrimSpace(gorace+" atexit_sleep_ms=0"))
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": cmdExitcode,
			"json":     cmdJSON,
			"jsonre":   cmdJSONRe,
			"jsonkeys": cmdJSONKeys,
			"jsoncmp":  cmdJSONCmp,
			"jsonlen":  cmdJSONLen,
			"jsonenv":  cmdJSONEnv,
			"trace":    cmdTrace,
			"norun":    cmdNoRun,
		},
	})
}

// update tells whether golden sections are to be rewritten; it is read while the test runs
// so that the test cache takes the variable into account.
func update() bool { return os.Getenv("CRW_UPDATE") == "1" }

// cmdExitcode is `exitcode N PROG ARGS...`: run PROG like exec and require exit status N.
// Its stdout and stderr are kept for the commands that follow.
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N prog [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %q is not a number", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// cmdJSON is `json [-in FILE] PATH WANT`: the value at PATH in the JSON document on the last
// command's stdout (or in FILE) must equal WANT, a JSON value; both sides are compared after
// decoding, so key order and spacing do not matter. With `!`, the value must differ from WANT
// or be absent.
// PATH is dot separated, numbers index arrays, and `.` is the whole document.
func cmdJSON(ts *testscript.TestScript, neg bool, args []string) {
	src, args := jsonSource(ts, args)
	if len(args) != 2 {
		ts.Fatalf("usage: json [-in FILE] PATH WANT")
	}
	got, ok := lookup(ts, decode(ts, src), args[0])
	if !ok {
		if neg {
			return
		}
		ts.Fatalf("json: no %s in %s", args[0], src)
	}
	var want any
	if err := json.Unmarshal([]byte(args[1]), &want); err != nil {
		ts.Fatalf("json: WANT %q is not JSON: %v", args[1], err)
	}
	g, w := canonical(got), canonical(want)
	if (g == w) == neg {
		if neg {
			ts.Fatalf("json: %s is %s", args[0], g)
		}
		ts.Fatalf("json: %s is %s, want %s", args[0], g, w)
	}
}

// cmdJSONEnv is `jsonenv [-in FILE] VAR PATH`: set VAR to the string at PATH.
func cmdJSONEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! jsonenv")
	}
	src, args := jsonSource(ts, args)
	if len(args) != 2 {
		ts.Fatalf("usage: jsonenv [-in FILE] VAR PATH")
	}
	v, ok := lookup(ts, decode(ts, src), args[1])
	s, isString := v.(string)
	if !ok || !isString {
		ts.Fatalf("jsonenv: %s in %s is not a string", args[1], src)
	}
	ts.Setenv(args[0], s)
}

// cmdJSONRe is `jsonre [-in FILE] PATH REGEXP`: the string at PATH matches REGEXP.
func cmdJSONRe(ts *testscript.TestScript, neg bool, args []string) {
	src, args := jsonSource(ts, args)
	if len(args) != 2 {
		ts.Fatalf("usage: jsonre [-in FILE] PATH REGEXP")
	}
	re, err := regexp.Compile(`(?m)` + args[1])
	ts.Check(err)
	v, ok := lookup(ts, decode(ts, src), args[0])
	s, isString := v.(string)
	if !ok || !isString {
		ts.Fatalf("jsonre: %s in %s is not a string", args[0], src)
	}
	if re.MatchString(s) == neg {
		if neg {
			ts.Fatalf("jsonre: %s %q matches %q", args[0], s, args[1])
		}
		ts.Fatalf("jsonre: %s %q does not match %q", args[0], s, args[1])
	}
}

// cmdJSONKeys is `jsonkeys [-in FILE] PATH KEY...`: the object at PATH has exactly these keys.
func cmdJSONKeys(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! jsonkeys")
	}
	src, args := jsonSource(ts, args)
	if len(args) < 1 {
		ts.Fatalf("usage: jsonkeys [-in FILE] PATH KEY...")
	}
	v, ok := lookup(ts, decode(ts, src), args[0])
	obj, isObject := v.(map[string]any)
	if !ok || !isObject {
		ts.Fatalf("jsonkeys: %s in %s is not an object", args[0], src)
	}
	got := slices.Sorted(maps.Keys(obj))
	want := slices.Sorted(slices.Values(args[1:]))
	if !slices.Equal(got, want) {
		ts.Fatalf("jsonkeys: %s has keys %v, want %v", args[0], got, want)
	}
}

// cmdJSONCmp is `jsoncmp FILE1 PATH1 FILE2 PATH2`: the two values are equal.
func cmdJSONCmp(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 4 {
		ts.Fatalf("usage: jsoncmp FILE1 PATH1 FILE2 PATH2")
	}
	a, okA := lookup(ts, decode(ts, args[0]), args[1])
	b, okB := lookup(ts, decode(ts, args[2]), args[3])
	if !okA || !okB {
		ts.Fatalf("jsoncmp: %s in %s or %s in %s is missing", args[1], args[0], args[3], args[2])
	}
	ca, cb := canonical(a), canonical(b)
	if (ca == cb) == neg {
		ts.Fatalf("jsoncmp: %s %s, %s %s", args[1], ca, args[3], cb)
	}
}

// cmdJSONLen is `jsonlen [-in FILE] PATH N`: the array or object at PATH has N members.
func cmdJSONLen(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! jsonlen")
	}
	src, args := jsonSource(ts, args)
	if len(args) != 2 {
		ts.Fatalf("usage: jsonlen [-in FILE] PATH N")
	}
	want, err := strconv.Atoi(args[1])
	if err != nil {
		ts.Fatalf("jsonlen: %q is not a number", args[1])
	}
	v, ok := lookup(ts, decode(ts, src), args[0])
	got := -1
	switch x := v.(type) {
	case []any:
		got = len(x)
	case map[string]any:
		got = len(x)
	}
	if !ok || got < 0 {
		ts.Fatalf("jsonlen: %s in %s is not an array or an object", args[0], src)
	}
	if got != want {
		ts.Fatalf("jsonlen: %s has %d members, want %d", args[0], got, want)
	}
}

// cmdTrace is `trace [-in FILE] RUN [ROWS]`: the text is a crw-trace/1 of RUN: a header line,
// then one JSON object a line for each row, numbered from seq 1 without a gap, from the started
// row to the ended row; ROWS, when given, is how many rows there are.
func cmdTrace(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! trace")
	}
	src, args := jsonSource(ts, args)
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: trace [-in FILE] RUN [ROWS]")
	}
	want := -1
	if len(args) == 2 {
		n, err := strconv.Atoi(args[1])
		if err != nil {
			ts.Fatalf("trace: %q is not a number", args[1])
		}
		want = n
	}
	text := ts.ReadFile(src)
	if !strings.HasSuffix(text, "\n") {
		ts.Fatalf("trace: %s does not end in a newline", src)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var header struct{ Format, Run string }
	if err := json.Unmarshal([]byte(lines[0]), &header); err != nil || header.Format != "crw-trace/1" || header.Run != args[0] {
		ts.Fatalf("trace: header %s, want format crw-trace/1 and run %s", lines[0], args[0])
	}
	rows := lines[1:]
	if len(rows) < 2 {
		ts.Fatalf("trace: %s has %d rows", src, len(rows))
	}
	for i, l := range rows {
		var row struct {
			Seq  int
			Type string
		}
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			ts.Fatalf("trace: %s line %d is not a JSON object: %v", src, i+2, err)
		}
		if row.Seq != i+1 {
			ts.Fatalf("trace: %s line %d has seq %d, want %d", src, i+2, row.Seq, i+1)
		}
		if (i == 0 && row.Type != "started") || (i == len(rows)-1 && row.Type != "ended") {
			ts.Fatalf("trace: %s line %d is a %s row", src, i+2, row.Type)
		}
	}
	if want >= 0 && len(rows) != want {
		ts.Fatalf("trace: %s has %d rows, want %d", src, len(rows), want)
	}
}

// cmdNoRun is `norun`: the state folder holds no run.
func cmdNoRun(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: norun")
	}
	entries, err := os.ReadDir(filepath.Join(ts.Getenv("CRW_STATE"), "flow"))
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	ts.Check(err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) > 0 {
		ts.Fatalf("the state folder holds runs: %s", strings.Join(names, ", "))
	}
}

func jsonSource(ts *testscript.TestScript, args []string) (string, []string) {
	if len(args) >= 2 && args[0] == "-in" {
		return args[1], args[2:]
	}
	return "stdout", args
}

func decode(ts *testscript.TestScript, src string) any {
	dec := json.NewDecoder(strings.NewReader(ts.ReadFile(src)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		ts.Fatalf("%s is not JSON: %v", src, err)
	}
	if dec.More() {
		ts.Fatalf("%s holds more than one JSON document", src)
	}
	return v
}

func lookup(ts *testscript.TestScript, v any, path string) (any, bool) {
	if path == "." {
		return v, true
	}
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[part]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil {
				ts.Fatalf("json: %q in %s indexes an array", part, path)
			}
			if i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// canonical encodes v with sorted keys and numbers in their shortest form.
func canonical(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(normalize(v)); err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = normalize(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = normalize(e)
		}
		return s
	}
	return v
}
