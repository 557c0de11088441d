package htmlview

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
)

var t0 = time.Date(2026, 12, 5, 16, 0, 0, 0, time.UTC)

func sec(f float64) time.Time { return t0.Add(time.Duration(f * float64(time.Second))) }

func round(f float64) string { return fmt.Sprintf("%.3f", f) }

// TestAnIdleNightIsABreak: two processes of a second each, 9h 12m apart. 2 s busy: the
// threshold is 1 s, so the night is a break of 5% of the 2 s drawn to scale (100 ms); the axis
// is 2.1 s long.
func TestAnIdleNightIsABreak(t *testing.T) {
	night := 9*time.Hour + 12*time.Minute
	resumed := sec(1).Add(night)
	a := newAxis(t0, resumed.Add(time.Second), []span{{t0, sec(1)}, {resumed, resumed.Add(time.Second)}})
	assert.Equal(t, 2*time.Second, a.busy)
	assert.Equal(t, 2100*time.Millisecond, a.total)
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{t0, "0.000"},
		{sec(0.5), "23.810"},                            // 0.5 / 2.1
		{sec(1), "47.619"},                              // 1 / 2.1
		{sec(1).Add(night / 2), "50.000"},               // half the night: half the break
		{resumed, "52.381"},                             // 1.1 / 2.1
		{resumed.Add(500 * time.Millisecond), "76.190"}, // 1.6 / 2.1
		{resumed.Add(time.Second), "100.000"},
	} {
		assert.Equal(t, c.want, round(a.at(c.at)), "at %s", c.at)
	}
	gaps := a.gaps()
	require.Len(t, gaps, 1)
	assert.Equal(t, sec(1), gaps[0].from)
	assert.Equal(t, resumed, gaps[0].to)
	assert.Equal(t, "paused 9h 12m", gapLabel("paused", gaps[0].to.Sub(gaps[0].from)))
}

// TestAShortIdleStretchIsDrawnToScale: 0.5 s between processes of a 19.5 s busy run is under
// the threshold (10% of it, 1.95 s): the axis is the wall time.
func TestAShortIdleStretchIsDrawnToScale(t *testing.T) {
	a := newAxis(t0, sec(20), []span{{t0, sec(10)}, {sec(10.5), sec(20)}})
	assert.Empty(t, a.gaps())
	assert.Equal(t, 20*time.Second, a.total)
	assert.Equal(t, "52.500", round(a.at(sec(10.5))))
	assert.Equal(t, "50.000", round(a.at(sec(10))))
}

// TestManyBreaksShareAQuarter: ten processes of a second, an hour apart: nine breaks, which
// together take 25% of the 10 s drawn to scale (2.5 s: each 277.8 ms, not 5%).
func TestManyBreaksShareAQuarter(t *testing.T) {
	var busy []span
	at := t0
	for range 10 {
		busy = append(busy, span{at, at.Add(time.Second)})
		at = at.Add(time.Second + time.Hour)
	}
	end := busy[9].to
	a := newAxis(t0, end, busy)
	assert.Len(t, a.gaps(), 9)
	assert.Equal(t, 12500*time.Millisecond, a.total.Round(time.Millisecond)) // each break a ninth of 2.5 s, cut to the ns
	assert.Equal(t, "8.000", round(a.at(busy[0].to)))                        // 1 / 12.5
	assert.Equal(t, "10.222", round(a.at(busy[1].from)))                     // (1 + 2.5/9) / 12.5
}

// TestOverlappingSpansAreOneBusyStretch: calls within processes and overlapping each other
// count once; an idle stretch after the last busy one (a live run's open end) is a break too.
func TestOverlappingSpansAreOneBusyStretch(t *testing.T) {
	a := newAxis(t0, sec(100), []span{{t0, sec(4)}, {sec(1), sec(3)}, {sec(3), sec(5)}})
	assert.Equal(t, 5*time.Second, a.busy)
	require.Len(t, a.gaps(), 1)
	assert.Equal(t, sec(5), a.gaps()[0].from)
	assert.Equal(t, sec(100), a.gaps()[0].to)
	assert.Equal(t, 5250*time.Millisecond, a.total)
}

// TestTicksStartEachStretchWithItsClock: each stretch of a second is 47.6% of the axis, so 22
// of its 48 steps: 45 ms, rounded to 50 ms, 19 of them within the stretch.
func TestTicksStartEachStretchWithItsClock(t *testing.T) {
	resumed := sec(1).Add(time.Hour)
	a := newAxis(t0, resumed.Add(time.Second), []span{{t0, sec(1)}, {resumed, resumed.Add(time.Second)}})
	var got []string
	for _, tk := range a.ticks() {
		got = append(got, round(tk.Left)+" "+tk.Label)
	}
	require.Len(t, got, 40)
	assert.Equal(t, []string{"0.000 16:00:00", "2.381 +50ms", "4.762 +100ms"}, got[:3])
	assert.Equal(t, []string{"45.238 +950ms", "52.381 17:00:01", "54.762 +50ms"}, got[19:22])
	assert.Equal(t, "97.619 +950ms", got[39])
}

func TestShort(t *testing.T) {
	for d, want := range map[time.Duration]string{
		250 * time.Millisecond:                        "250ms",
		1500 * time.Millisecond:                       "1.5s",
		2 * time.Second:                               "2s",
		42 * time.Second:                              "42s",
		3*time.Minute + 5*time.Second:                 "3m 5s",
		40 * time.Minute:                              "40m",
		9*time.Hour + 12*time.Minute:                  "9h 12m",
		9*time.Hour + 11*time.Minute + 59*time.Second: "9h 12m",
		50 * time.Hour:                                "2d 2h",
	} {
		assert.Equal(t, want, short(d), "%s", d)
	}
	assert.Equal(t, "waited 40m for an answer", gapLabel("waiting_decision", 40*time.Minute))
	assert.Equal(t, "waited 20m for a verdict", gapLabel("waiting_verdict", 20*time.Minute))
	assert.Equal(t, "crashed, idle 2h", gapLabel("crashed", 2*time.Hour))
	assert.Equal(t, "idle 5s", gapLabel("completed", 5*time.Second))
}

// TestTheLabelIsTheLongestThatFits: 6.6 px a character and 8 px of padding.
func TestTheLabelIsTheLongestThatFits(t *testing.T) {
	l := labels("c12", "reviewer", "completed")
	assert.Equal(t, []string{"c12 reviewer completed", "c12 reviewer", "c12"}, l)
	for px, want := range map[float64]string{
		400:   "c12 reviewer completed",
		153.2: "c12 reviewer completed", // 22 × 6.6 + 8
		153:   "c12 reviewer",
		87.2:  "c12 reviewer", // 12 × 6.6 + 8
		87:    "c12",
		27.8:  "c12", // 3 × 6.6 + 8
		27:    "",
		2:     "",
	} {
		assert.Equal(t, want, fit(l, px), "%v px", px)
	}
}

// TestLaneNamesKeepTheirEnds: a fan-out's nodes, which differ at their ends, are told apart in
// the names column: it widens to the longest name (within bounds), and a name past the
// longest shown keeps its two ends around an ellipsis, its title whole.
func TestLaneNamesKeepTheirEnds(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "review-auth-security", laneLabel("review-auth-security"))
	assert.Equal(t, "review-an-extre…the-correctness", laneLabel("review-an-extremely-long-part-of-the-correctness"))
	assert.Equal(t, "é"+strings.Repeat("x", 14)+"…"+strings.Repeat("x", 14)+"é", laneLabel("é"+strings.Repeat("x", 40)+"é"), "cut by characters, not bytes")

	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var rows []journal.Row
	seq := uint64(0)
	add := func(r journal.Row) {
		seq++
		r.Seq, r.At = seq, start.Add(time.Duration(seq)*time.Second)
		rows = append(rows, r)
	}
	add(journal.Row{Type: journal.TypeStarted, Run: "20261201-100000-abcdef", Backend: "fake", Workflow: "wf.js"})
	for i, node := range []string{"review-auth-correctness", "review-auth-security", "review-an-extremely-long-part-of-the-correctness"} {
		call := fmt.Sprintf("c%d", i+1)
		add(journal.Row{Type: journal.TypePrepared, Call: call, Index: i + 1, Role: "reviewer", Node: node})
		add(journal.Row{Type: journal.TypeCompleted, Call: call})
	}
	add(journal.Row{Type: journal.TypeEnded, Status: "completed"})
	var b bytes.Buffer
	require.NoError(t, Render(&b, rows, Options{}))
	page := b.String()
	assert.Contains(t, page, `<div id="canvas" style="--names: 235px">`, "31 characters × 7 px + 18")
	assert.Contains(t, page, `title="review-auth-correctness">review-auth-correctness</div>`)
	assert.Contains(t, page, `title="review-auth-security">review-auth-security</div>`)
	assert.Contains(t, page, `title="review-an-extremely-long-part-of-the-correctness">review-an-extre…the-correctness</div>`)
}
