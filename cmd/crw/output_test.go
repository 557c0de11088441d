package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/cmd/crw/internal/backends"
	"github.com/crw-dev/crw/cmd/crw/internal/cli"
)

// runID matches a run id in an error.
const runID = `\d{8}-\d{6}-[0-9a-f]{6}`

// brokenOut is a standard output that cannot be written (a full disk).
type brokenOut struct{}

func (brokenOut) Write([]byte) (int, error) {
	return 0, &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.ENOSPC}
}

// closedPipe is a standard output whose reader has gone (crw … | head).
type closedPipe struct{}

func (closedPipe) Write([]byte) (int, error) {
	return 0, &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
}

// TestOutputThatCannotBeWrittenFailsTheCommand: a command whose output never reached its
// reader does not exit 0, and what went wrong is said on standard error, whatever it was.
func TestOutputThatCannotBeWrittenFailsTheCommand(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	throws := filepath.Join(t.TempDir(), "throws.js")
	if err := os.WriteFile(throws, []byte("export default function main() { throw new Error(\"no\"); }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{name: "a command that succeeded", args: []string{"flow", "list", "--json"},
			code: 1, stderr: regexp.QuoteMeta("crw: capability_unavailable: cannot write to standard output")},
		{name: "a run that completed", args: []string{"flow", "run", "../../workflows/plan-build-review.js"},
			code: 1, stderr: "crw: capability_unavailable: run " + runID + ": cannot write to standard output"},
		{name: "a run whose failure its output was to report", args: []string{"flow", "run", throws, "--json"},
			code: 1, stderr: "crw: capability_unavailable: run " + runID + ": cannot write to standard output"},
		{name: "a coded error meant for standard output", args: []string{"flow", "status", "20261201-000000-abcdef", "--json"},
			code: 1, stderr: "crw: invalid_request: no run "},
		{name: "a command line that does not parse", args: []string{"flow", "status", "--json", "--nope"},
			code: 2, stderr: "crw: invalid_request: unknown flag: --nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errOut bytes.Buffer
			code := cli.Run(append(tt.args, "--state", state), cli.IO{In: strings.NewReader(""), Out: brokenOut{}, ErrOut: &errOut}, backends.Registry())
			assert.Equal(t, tt.code, code, "stderr: %s", errOut.String())
			assert.Regexp(t, "(?m)^"+tt.stderr, errOut.String())
		})
	}
}

// TestAClosedPipeIsNoError: a reader that closed the pipe (crw flow trace RUN | head) had what
// it wanted: the command ends as it would have, its own error (and code) said, nothing else.
// A command that stops at the failed write (trace, show --json) ends as if it had written all.
func TestAClosedPipeIsNoError(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	var runOut bytes.Buffer
	code := cli.Run([]string{"flow", "run", "../../workflows/plan-build-review.js", "--state", state, "--json=run"},
		cli.IO{In: strings.NewReader(""), Out: &runOut, ErrOut: io.Discard}, backends.Registry())
	run := regexp.MustCompile(runID).FindString(runOut.String())
	if code != 0 || run == "" {
		t.Fatalf("the run to read: exit %d, %s", code, runOut.String())
	}
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{name: "a command that succeeded", args: []string{"flow", "list", "--json"}, code: 0, stderr: ""},
		{name: "a run that completed", args: []string{"flow", "run", "../../workflows/plan-build-review.js"}, code: 0, stderr: ""},
		{name: "a coded error meant for standard output", args: []string{"flow", "status", "20261201-000000-abcdef", "--json"},
			code: 1, stderr: "crw: invalid_request: no run "},
		{name: "a trace", args: []string{"flow", "trace", run}, code: 0, stderr: ""},
		{name: "a timeline in JSON", args: []string{"flow", "show", run, "--json"}, code: 0, stderr: ""},
		{name: "a diagnosis in JSON", args: []string{"flow", "inspect", run, "--json"}, code: 0, stderr: ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var errOut bytes.Buffer
			code := cli.Run(append(tt.args, "--state", state), cli.IO{In: strings.NewReader(""), Out: closedPipe{}, ErrOut: &errOut}, backends.Registry())
			assert.Equal(t, tt.code, code, "stderr: %s", errOut.String())
			if tt.stderr == "" {
				assert.NotContains(t, errOut.String(), "crw: ", "no error said")
			} else {
				assert.Regexp(t, "(?m)^"+tt.stderr, errOut.String())
			}
		})
	}
}

// TestClosedPipeDoesNotKillARun: crw … | head, the reader gone before the run ends. The run goes
// on to its end, and the command exits as the run ended (0: completed), not killed by SIGPIPE.
func TestClosedPipeDoesNotKillARun(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	cmd := exec.Command("crw", "flow", "run", "../../workflows/plan-build-review.js")
	cmd.Env = append(os.Environ(), "CRW_STATE="+state, "GORACE=atexit_sleep_ms=0")
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Run()
	w.Close()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ws, _ := ee.Sys().(syscall.WaitStatus)
		t.Fatalf("want exit 0, got exit %d (killed by a signal: %v)", ee.ExitCode(), ws.Signaled())
	}
	assert.NoError(t, err)

	list := durableCrw(t, state, nil, "flow", "list", "--json")
	assert.Regexp(t, `^\{"runs":\[\{"run":"`+runID+`","state":"ended","status":"completed",`, list.stdout)
}

// TestFollowWritesAResultAsItIs: the result of a run that crw flow follow prints (read from the
// status its process published) has <, > and & as the workflow returned them, as status does.
func TestFollowWritesAResultAsItIs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	wf := filepath.Join(dir, "wf.js")
	if err := os.WriteFile(wf, []byte(`export default async function main() { return {"id": "<a & b>"}; }`), 0o644); err != nil {
		t.Fatal(err)
	}
	start := durableCrw(t, state, nil, "flow", "start", wf, "--backend", "fake", "--no-repo")
	if start.exit != 0 {
		t.Fatalf("crw flow start: %s%s", start.stdout, start.stderr)
	}
	run := strings.TrimSpace(start.stdout)
	for _, args := range [][]string{{"flow", "follow", run}, {"flow", "status", run, "--json"}, {"flow", "follow", run, "--json"}} {
		res := durableCrw(t, state, nil, args...)
		assert.Equal(t, 0, res.exit, "%v: %s", args, res.stderr)
		assert.Contains(t, res.stdout, `{"id":"<a & b>"}`, "%v", args)
	}
}
