package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/crw-dev/crw/cmd/crw/internal/backends"
	"github.com/crw-dev/crw/cmd/crw/internal/cli"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local"
)

// TestMain makes the test binary double as crw, so scripts run the real command in a
// subprocess with `exec crw …`.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"crw": func() { os.Exit(cli.Main(backends.Registry())) },
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
			// Run processes, journals and traces, for the durable_*.txtar scripts.
			"killed":     cmdKilled,
			"killrun":    cmdKillRun,
			"waitstatus": cmdWaitStatus,
			"runenv":     cmdRunEnv,
			"proclock":   cmdProcLock,
			"rows":       cmdRows,
			"truncate":   cmdTruncate,
			"garble":     cmdGarble,
			"eq":         cmdEq,
			"jsonset":    cmdJSONSet,
			"hosttmp":    cmdHostTmp,
			"filemode":   cmdFileMode,
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
// row to the ended row, whose calls pass enginetest.JournalProblems (one terminal row a
// generation); ROWS, when given, is how many rows there are.
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
	all := make([]journal.Row, len(rows))
	for i, l := range rows {
		row := &all[i]
		if err := json.Unmarshal([]byte(l), row); err != nil {
			ts.Fatalf("trace: %s line %d is not a row: %v", src, i+2, err)
		}
		if row.Seq != uint64(i+1) {
			ts.Fatalf("trace: %s line %d has seq %d, want %d", src, i+2, row.Seq, i+1)
		}
		if (i == 0 && row.Type != "started") || (i == len(rows)-1 && row.Type != "ended") {
			ts.Fatalf("trace: %s line %d is a %s row", src, i+2, row.Type)
		}
	}
	if problems := enginetest.JournalProblems(all); len(problems) > 0 {
		ts.Fatalf("trace: %s: %s", src, strings.Join(problems, "; "))
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

// pollTimeout bounds how long a command waits for a detached run's process.
const pollTimeout = 60 * time.Second

// cmdKilled is `killed PROG ARGS...`: run PROG like exec and require that it was killed by
// SIGKILL (a crash point of CRW_CRASH_AFTER_COMMIT).
func cmdKilled(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: killed prog [args...]")
	}
	err := ts.Exec(args[0], args[1:]...)
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		ts.Fatalf("%s was not killed: %v", args[0], err)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		ts.Fatalf("%s ended %v, want killed by SIGKILL", args[0], err)
	}
}

// liveRun is the process that holds RUN now: its pid, from state.json, once it holds the run
// lock.
func liveRun(ts *testscript.TestScript, run string) int {
	state := ts.Getenv("CRW_STATE")
	if !local.Held(state, run) {
		ts.Fatalf("run %s has no live process", run)
	}
	st, err := enginetest.State(state).Published(run)
	ts.Check(err)
	if st.PID <= 0 {
		ts.Fatalf("run %s: state.json names no pid", run)
	}
	return st.PID
}

// cmdKillRun is `killrun RUN`: SIGKILL the process that holds RUN (the pid of its state.json)
// and wait until its run lock is free.
func cmdKillRun(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: killrun RUN")
	}
	pid := liveRun(ts, args[0])
	ts.Check(syscall.Kill(pid, syscall.SIGKILL))
	deadline := time.Now().Add(pollTimeout)
	for local.Held(ts.Getenv("CRW_STATE"), args[0]) {
		if time.Now().After(deadline) {
			ts.Fatalf("run %s: process %d still holds the run %v after SIGKILL", args[0], pid, pollTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cmdWaitStatus is `waitstatus RUN PATH WANT`: poll `crw flow status RUN --json` (through the
// engine) until the value at PATH equals WANT, a JSON value.
func cmdWaitStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: waitstatus RUN PATH WANT")
	}
	var want any
	if err := json.Unmarshal([]byte(args[2]), &want); err != nil {
		ts.Fatalf("waitstatus: WANT %q is not JSON: %v", args[2], err)
	}
	w := canonical(want)
	deadline := time.Now().Add(pollTimeout)
	last := ""
	for {
		st, err := enginetest.State(ts.Getenv("CRW_STATE")).Status(args[0])
		if err == nil {
			data, _ := json.Marshal(st)
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			var doc any
			ts.Check(dec.Decode(&doc))
			if got, ok := lookup(ts, doc, args[1]); ok {
				if last = canonical(got); last == w {
					return
				}
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitstatus: %s of run %s is %s after %v, want %s", args[1], args[0], last, pollTimeout, w)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdRunEnv is `runenv RUN NAME VALUE`: the live process of RUN has exactly one NAME entry in
// its environment (/proc/PID/environ), and it is VALUE.
func cmdRunEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: runenv RUN NAME VALUE")
	}
	pid := liveRun(ts, args[0])
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	ts.Check(err)
	var found []string
	for _, kv := range strings.Split(string(data), "\x00") {
		if v, ok := strings.CutPrefix(kv, args[1]+"="); ok {
			found = append(found, v)
		}
	}
	if len(found) != 1 || found[0] != args[2] {
		ts.Fatalf("runenv: process %d of run %s has %s=%q, want exactly %q", pid, args[0], args[1], found, args[2])
	}
}

// cmdProcLock is `proclock RUN VAR`: exactly one process lock of RUN is held now; set VAR to its
// token (process.<token>.lock).
func cmdProcLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: proclock RUN VAR")
	}
	held := local.ProcessLocks(ts.Getenv("CRW_STATE"), args[0])
	if len(held) != 1 {
		ts.Fatalf("proclock: run %s has %d held process locks %v, want 1", args[0], len(held), held)
	}
	ts.Setenv(args[1], held[0])
}

// cmdRows is `rows TRACE OUT TYPE [CALL]`: write to OUT, as one JSON array, the rows of the
// crw-trace/1 file TRACE (or stdout) of type TYPE (any type for "*") that belong to CALL when
// it is given, in trace order and exactly as stored.
func cmdRows(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 || len(args) > 4 {
		ts.Fatalf("usage: rows TRACE OUT TYPE [CALL]")
	}
	lines := strings.Split(strings.TrimSuffix(ts.ReadFile(args[0]), "\n"), "\n")
	if !strings.Contains(lines[0], `"format":"crw-trace/1"`) {
		ts.Fatalf("rows: %s has no crw-trace/1 header", args[0])
	}
	out := []json.RawMessage{}
	for i, l := range lines[1:] {
		var row struct{ Type, Call string }
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			ts.Fatalf("rows: %s line %d: %v", args[0], i+2, err)
		}
		if (args[2] == "*" || row.Type == args[2]) && (len(args) < 4 || row.Call == args[3]) {
			out = append(out, json.RawMessage(l))
		}
	}
	data, err := json.Marshal(out)
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), data, 0o644))
}

// cmdTruncate is `truncate FILE SIZE`.
func cmdTruncate(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: truncate FILE SIZE")
	}
	size, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	ts.Check(os.Truncate(ts.MkAbs(args[0]), size))
}

// cmdGarble is `garble FILE OFFSET [LEN]`: overwrite LEN bytes of FILE from OFFSET (to its end
// without LEN) with a fixed pseudo-random garbage.
func cmdGarble(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: garble FILE OFFSET [LEN]")
	}
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	off, err := strconv.Atoi(args[1])
	ts.Check(err)
	end := len(data)
	if len(args) == 3 {
		n, err := strconv.Atoi(args[2])
		ts.Check(err)
		end = off + n
	}
	if off < 0 || off >= end || end > len(data) {
		ts.Fatalf("garble: bytes %d to %d are not inside %s (%d bytes)", off, end, args[0], len(data))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := off; i < end; i++ {
		b := byte(rng.Uint32())
		if b == data[i] {
			b = ^b
		}
		data[i] = b
	}
	ts.Check(os.WriteFile(path, data, 0o600))
}

// cmdEq is `eq A B`: the two words are equal (with `!`, they differ).
func cmdEq(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: eq A B")
	}
	if (args[0] == args[1]) == neg {
		ts.Fatalf("eq: %q and %q", args[0], args[1])
	}
}

// cmdJSONSet is `jsonset FILE PATH VALUE`: rewrite the JSON document FILE with the member at
// PATH (an object member that exists) set to VALUE, a JSON value.
func cmdJSONSet(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 || args[1] == "." {
		ts.Fatalf("usage: jsonset FILE PATH VALUE")
	}
	doc := decode(ts, args[0])
	var value any
	if err := json.Unmarshal([]byte(args[2]), &value); err != nil {
		ts.Fatalf("jsonset: VALUE %q is not JSON: %v", args[2], err)
	}
	parent, name := ".", args[1]
	if i := strings.LastIndex(args[1], "."); i >= 0 {
		parent, name = args[1][:i], args[1][i+1:]
	}
	v, _ := lookup(ts, doc, parent)
	obj, ok := v.(map[string]any)
	if _, has := obj[name]; !ok || !has {
		ts.Fatalf("jsonset: %s has no member %s", args[0], args[1])
	}
	obj[name] = value
	data, err := json.MarshalIndent(doc, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), append(data, '\n'), 0o600))
}

// cmdHostTmp is `hosttmp LOG N DIR`: the fake host's log (fake.HostLogEnv) has at least N
// turns, each sent by a process whose TMPDIR was DIR. How many more depends on how far the
// processes killed before got, which a loaded machine changes.
func cmdHostTmp(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: hosttmp LOG N DIR")
	}
	var n int
	for _, line := range strings.Split(strings.TrimSpace(ts.ReadFile(args[0])), "\n") {
		var l fake.HostLine
		ts.Check(json.Unmarshal([]byte(line), &l))
		if l.TmpDir != args[2] {
			ts.Fatalf("hosttmp: turn %s was sent by a process whose TMPDIR is %q, want %q", l.Turn, l.TmpDir, args[2])
		}
		n++
	}
	if want, err := strconv.Atoi(args[1]); err != nil || n < want {
		ts.Fatalf("hosttmp: %d turns sent, want at least %s", n, args[1])
	}
}

// cmdFileMode is `filemode FILE MODE`: FILE's permission bits must be MODE (octal).
func cmdFileMode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: filemode FILE MODE")
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)
	if got := fi.Mode().Perm(); (got == os.FileMode(want)) == neg {
		ts.Fatalf("%s has mode %#o, want %s%#o", args[0], got, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}
