package htmlview_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/htmlview"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// run40 runs testdata/run40.js: 40 calls, a repair (c2), a continuation (c3 of c1), a rate
// limit that pauses the run (c20), a resume that runs the held calls again, and a lost call
// (c40, unknown).
func run40(t *testing.T) []journal.Row {
	t.Helper()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: "testdata/run40.js"})
	require.NoError(t, err)
	for i, answers := range []string{"testdata/paused.json", "testdata/resumed.json"} {
		data, err := os.ReadFile(answers)
		require.NoError(t, err)
		a, err := fake.ParseAnswers(answers, data)
		require.NoError(t, err)
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
		require.NoError(t, err)
		require.Equal(t, []store.RunStatus{store.RunPaused, store.RunCompleted}[i], end.Status, "%+v", end.Error)
	}
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	return rows
}

var barRE = regexp.MustCompile(`<div class="bar status-([a-z_]+)" id="call-(c\d+)"`)

// TestThePageDrawsEveryCall: one bar per call with its status' class, the repair inside its
// bar, the continuation as a link, the held attempts as ghosts, the pause and the first
// process's end marked, and nothing that reaches the network.
func TestThePageDrawsEveryCall(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, htmlview.Render(&b, run40(t), htmlview.Options{}))
	page := b.String()
	statuses := map[string]int{}
	seen := map[string]bool{}
	for _, m := range barRE.FindAllStringSubmatch(page, -1) {
		statuses[m[1]]++
		assert.False(t, seen[m[2]], "call %s drawn twice", m[2])
		seen[m[2]] = true
	}
	assert.Equal(t, map[string]int{"completed": 39, "unknown": 1}, statuses)
	assert.Contains(t, page, `<div class="bar status-unknown" id="call-c40"`)
	assert.Regexp(t, `id="call-c2"[^>]*>(<div class="turn"[^>]*></div>)<div class="turn repair" title="repair turn 2`, page)
	assert.Regexp(t, `id="call-c3"[^>]*>.*<a class="cont" href="#call-c1"`, page)
	assert.GreaterOrEqual(t, strings.Count(page, `class="ghost status-held"`), 1)
	assert.Equal(t, 1, strings.Count(page, `class="mark pause"`))
	assert.Equal(t, 1, strings.Count(page, `class="mark process"`))
	for _, net := range []string{"http://", "https://", "<link", "src="} {
		assert.NotContains(t, page, net)
	}
}

// TestTheDetailsCannotEndTheirScript: a prompt holding </script> stays inside the details blob.
func TestTheDetailsCannotEndTheirScript(t *testing.T) {
	t.Parallel()
	rows := []journal.Row{
		{Seq: 1, Type: journal.TypeStarted, Run: "r", Workflow: "<b>wf</b>"},
		{Seq: 2, Type: journal.TypePrepared, Call: "c1", Index: 1, Role: "explorer", Node: "<n>", Prompt: "</script><script>alert(1)</script>"},
	}
	var b bytes.Buffer
	require.NoError(t, htmlview.Render(&b, rows, htmlview.Options{Live: true}))
	page := b.String()
	assert.Equal(t, 2, strings.Count(page, "</script>"), "only the page's own two scripts end")
	assert.NotContains(t, page, "<b>wf</b>")
	assert.Contains(t, page, `<div class="bar status-open" id="call-c1"`)
	assert.Contains(t, page, `http-equiv="refresh"`)
}

// TestChromiumShowsThePage: headless Chromium loads the page with no console error, its
// script runs to its end, the DOM has one bar per call, and a call named in the address shows
// its details (prompt, the call it continues).
func TestChromiumShowsThePage(t *testing.T) {
	t.Parallel()
	bin := os.Getenv("CRW_CHROMIUM")
	if bin == "" {
		t.Skip("CRW_CHROMIUM names no Chromium (Debian's package chromium: /usr/bin/chromium)")
	}
	var b bytes.Buffer
	require.NoError(t, htmlview.Render(&b, run40(t), htmlview.Options{}))
	dir := t.TempDir()
	page := filepath.Join(dir, "run.html")
	require.NoError(t, os.WriteFile(page, b.Bytes(), 0o644))
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--enable-logging=stderr", "--v=0", "--virtual-time-budget=2000", "--dump-dom", "file://"+page+"#call-c3")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), errOut.String())
	dom := out.String()
	assert.Contains(t, dom, `data-ready="1"`, "the page's script did not run to its end")
	assert.Len(t, regexp.MustCompile(`<div class="bar status-[a-z_]+( selected)?" id="call-c\d+"`).FindAllString(dom, -1), 40)
	assert.Contains(t, dom, `<h2>c3  architect/plan  completed</h2>`)
	assert.Contains(t, dom, "and more")
	assert.Contains(t, dom, `class="bar status-completed selected"`)
	for _, line := range strings.Split(errOut.String(), "\n") {
		assert.NotContains(t, line, "CONSOLE", "the console: %s", line)
		assert.NotContains(t, line, "Uncaught")
	}
}

// TestAPageOfManyLongCallsStaysBounded: 5,000 calls whose prompts and answers are 16 KiB each
// make a page within the details' budget (16 MiB) and the bars, not gigabytes.
func TestAPageOfManyLongCallsStaysBounded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 16<<10)
	rows := []journal.Row{{Seq: 1, Type: journal.TypeStarted, Run: "r"}}
	for i := 1; i <= htmlview.MaxCalls; i++ {
		id := "c" + strconv.Itoa(i)
		out := json.RawMessage(strconv.Quote(long))
		rows = append(rows,
			journal.Row{Seq: uint64(len(rows) + 1), Type: journal.TypePrepared, Call: id, Index: i, Role: "explorer", Node: "n", Prompt: long},
			journal.Row{Seq: uint64(len(rows) + 2), Type: journal.TypeCompleted, Call: id, Output: out})
	}
	var b bytes.Buffer
	require.NoError(t, htmlview.Render(&b, rows, htmlview.Options{}))
	assert.Less(t, b.Len(), 24<<20, "the page's size")
	assert.Len(t, barRE.FindAllString(b.String(), -1), htmlview.MaxCalls, "every call still has its bar")
}
