package htmlview_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/htmlview"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// The idle stretches gapRun puts into its run, as a user would leave it: a night after the
// rate limit, 35 minutes before the decision is answered and 5 more before the resume, 15
// minutes before the verdict and 5 more before the last resume.
const (
	night        = 9*time.Hour + 12*time.Minute
	toAnswer     = 35 * time.Minute
	toResume     = 5 * time.Minute
	toVerdict    = 15 * time.Minute
	toLastResume = 5 * time.Minute
)

// gapRun runs testdata/gap/gap.js on the fake backend in four processes: the first paused by
// a rate limit (call 7), the second stopped by the decision keep, the third by crw.effect on
// the critic's lost call, the fourth to the end. The rows' times then have the idle stretches
// above added where they fall (the clock of a test cannot wait a night): every row from a
// gap's end on moves by it, and apart from them the rows follow each other 20 ms apart.
func gapRun(t *testing.T) []journal.Row {
	t.Helper()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	// The workflow where a team keeps one, as the page's header names it.
	src, err := os.ReadFile("testdata/gap/gap.js")
	require.NoError(t, err)
	wf := filepath.Join(t.TempDir(), "workflows", "review-fanout.js")
	require.NoError(t, os.MkdirAll(filepath.Dir(wf), 0o755))
	require.NoError(t, os.WriteFile(wf, src, 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	exec := func(answers string, want store.RunStatus) {
		path := filepath.Join("testdata/gap", answers)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		a, err := fake.ParseAnswers(path, data)
		require.NoError(t, err)
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
		require.NoError(t, err)
		require.Equal(t, want, end.Status, "%s: %+v", answers, end.Error)
	}
	seq := func() uint64 {
		rows, err := svc.Rows(ctx, id)
		require.NoError(t, err)
		return rows[len(rows)-1].Seq + 1
	}
	shifts := map[uint64]time.Duration{}
	exec("1-paused.json", store.RunPaused)
	shifts[seq()] += night
	exec("2-resumed.json", store.RunWaitingDecision)
	shifts[seq()] += toAnswer
	_, err = svc.Answer(ctx, id, "keep", json.RawMessage(`{"keep":true}`), "reviewer@example.com", false)
	require.NoError(t, err)
	shifts[seq()] += toResume
	exec("3-answered.json", store.RunWaitingDecision)
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	var lost string
	for _, r := range rows {
		if r.Type == journal.TypeOutcomeUnknown {
			lost = r.Call
		}
	}
	require.NotEmpty(t, lost, "the critic's call ends unknown")
	shifts[seq()] += toVerdict
	_, err = svc.Recover(ctx, id, lost, decisions.Verdict{Verdict: decisions.VerdictNotApplied}, "operator@example.com", false)
	require.NoError(t, err)
	shifts[seq()] += toLastResume
	exec("4-recovered.json", store.RunCompleted)
	rows, err = svc.Rows(ctx, id)
	require.NoError(t, err)
	// The rows' own times are the machine's: under load one call can take ten times another,
	// and the widths the page gives would change with it. Each row is put 20 ms after the one
	// before it instead, so the layout drawn is the same on every machine.
	start := rows[0].At
	var by time.Duration
	for i := range rows {
		by += shifts[rows[i].Seq]
		rows[i].At = start.Add(time.Duration(i)*20*time.Millisecond + by)
	}
	return rows
}

var (
	callBarRE = regexp.MustCompile(`<div class="bar status-[a-z_]+[^"]*" id="call-(c\d+)"[^>]*style="left:([0-9.]+)%;width:([0-9.]+)%`)
	gapRE     = regexp.MustCompile(`<div class="gap" title="[^"]*" style="left:([0-9.]+)%;width:([0-9.]+)%"><span>([^<]*)</span>`)
)

// TestAResumedRunsBarsAreDrawnToTheirBusyTime: the night, the wait for the answer and the
// wait for the verdict are breaks labelled with their lengths, and so every call's bar keeps
// a width a user can see (a 40 ms call of a run busy for about half a second: some percent of
// the axis, not the 0.0001% of 10 hours); the decision and the verdict waited for have bars in
// lanes of their own; the summary counts the processes.
func TestAResumedRunsBarsAreDrawnToTheirBusyTime(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, htmlview.Render(&b, gapRun(t), htmlview.Options{}))
	page := b.String()
	var gaps []string
	for _, m := range gapRE.FindAllStringSubmatch(page, -1) {
		gaps = append(gaps, m[3])
	}
	assert.Equal(t, []string{"paused 9h 12m", "waited 40m for an answer", "waited 20m for a verdict"}, gaps)
	bars := callBarRE.FindAllStringSubmatch(page, -1)
	require.Len(t, bars, 13)
	for _, m := range bars {
		w, err := strconv.ParseFloat(m[3], 64)
		require.NoError(t, err)
		assert.Greater(t, w, 2.0, "%s is %s%% of the axis", m[1], m[3])
	}
	assert.Contains(t, page, `id="call-decision:keep" data-call="decision:keep" data-status="answered" data-labels="keep answered|keep|keep"`)
	assert.Regexp(t, `class="bar wait verdict wait-not_applied" id="call-verdict:c12"`, page)
	assert.Contains(t, page, `data-labels="c2 reviewer completed|c2 reviewer|c2"`)
	assert.Contains(t, page, `<b>4</b> processes`)
	assert.Contains(t, page, `<b>12</b> completed`)
	assert.Contains(t, page, `wall <b>10h 12m</b>`)
}

// TestChromiumDrawsAResumedRunReadably: headless Chromium lays the page of the resumed run out
// at 1280x800 and at 800x600; the widths its script measured (data-px) give every call's bar
// at least 4 px, the bars with room carry their labels (each fitting its bar), and the
// screenshots are written ($CRW_SCREENSHOTS keeps them, e.g. to redraw docs/images).
func TestChromiumDrawsAResumedRunReadably(t *testing.T) {
	t.Parallel()
	bin := os.Getenv("CRW_CHROMIUM")
	if bin == "" {
		t.Skip("CRW_CHROMIUM names no Chromium (Debian's package chromium: /usr/bin/chromium; bash .ci/install-chromium.sh installs it)")
	}
	var b bytes.Buffer
	require.NoError(t, htmlview.Render(&b, gapRun(t), htmlview.Options{}))
	dir := t.TempDir()
	page := filepath.Join(dir, "run.html")
	require.NoError(t, os.WriteFile(page, b.Bytes(), 0o644))
	shots := os.Getenv("CRW_SCREENSHOTS")
	if shots == "" {
		shots = dir
	}
	barRE := regexp.MustCompile(`<div class="bar status-[a-z_]+" id="call-(c\d+)"[^>]*data-labels="([^"]*)"[^>]*data-px="([0-9.]+)"[^>]*>.*?<span class="lbl">([^<]*)</span>`)
	for _, size := range []struct{ w, h int }{{1280, 800}, {800, 600}} {
		window := fmt.Sprintf("--window-size=%d,%d", size.w, size.h)
		chromium := func(args ...string) string {
			args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
				"--user-data-dir=" + filepath.Join(dir, "profile"), "--enable-logging=stderr", "--v=0", "--virtual-time-budget=2000", window}, args...)
			cmd := exec.Command(bin, append(args, "file://"+page)...)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			require.NoError(t, cmd.Run(), errOut.String())
			for _, line := range strings.Split(errOut.String(), "\n") {
				assert.NotContains(t, line, "CONSOLE", "the console: %s", line)
				assert.NotContains(t, line, "Uncaught")
			}
			return out.String()
		}
		dom := chromium("--dump-dom")
		require.Contains(t, dom, `data-ready="1"`, "the page's script did not run to its end")
		bars := barRE.FindAllStringSubmatch(dom, -1)
		require.Len(t, bars, 13, "%dx%d: every call's bar, measured", size.w, size.h)
		labelled, whole := 0, 0
		for _, m := range bars {
			px, err := strconv.ParseFloat(m[3], 64)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, px, 4.0, "%dx%d: %s is %s px wide", size.w, size.h, m[1], m[3])
			if m[4] == "" {
				// Room for its id beside a flag and a continuation's link: 3 × 6.6 + 8 + 12 + 26.
				assert.Less(t, px, 66.0, "%dx%d: %s, %s px wide, has no label", size.w, size.h, m[1], m[3])
				continue
			}
			labelled++
			if strings.Count(m[4], " ") == 2 {
				whole++
			}
			assert.Contains(t, strings.Split(m[2], "|"), m[4], "%s's label", m[1])
			assert.LessOrEqual(t, float64(len(m[4]))*6.6+8, px, "%s's label %q fits its bar", m[1], m[4])
		}
		assert.GreaterOrEqual(t, labelled, len(bars)/2, "%dx%d: bars labelled", size.w, size.h)
		if size.w == 1280 {
			assert.Positive(t, whole, "some bar has room for its id, role and status")
		}
		assert.Contains(t, dom, `<span>paused 9h 12m</span>`)
		shot := filepath.Join(shots, fmt.Sprintf("timeline-%dx%d.png", size.w, size.h))
		chromium("--screenshot=" + shot)
		f, err := os.Open(shot)
		require.NoError(t, err)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err)
		assert.Equal(t, image.Rect(0, 0, size.w, size.h), img.Bounds())
	}
}
