package htmlview

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The axis draws the time a run was doing something to scale and each idle stretch (no
// process running, no call in flight) longer than the threshold as a break of a fixed width
// labelled with its length: a resumed run's bars stay as wide as a run's without the night
// between its processes. Everything is computed from the rows' times, never the clock.
const (
	// minIdle: an idle stretch shorter than this, or than idleShare of the busy time, is drawn
	// to scale (a resume a second later is not a break).
	minIdle   = time.Second
	idleShare = 0.10
	// breakShare is a break's width as a share of the time drawn to scale; all breaks together
	// take at most breaksShare of it, however many processes the run had.
	breakShare  = 0.05
	breaksShare = 0.25
)

// span is a stretch of wall time, from and to.
type span struct{ from, to time.Time }

// piece is a part of the axis: a stretch drawn to scale, or a break (Gap) drawn at a fixed
// width whatever its length. off is where it starts on the axis, width its length there.
type piece struct {
	from, to   time.Time
	off, width time.Duration
	gap        bool
}

// axis maps wall times onto the axis, 0 to 100.
type axis struct {
	pieces []piece
	total  time.Duration // the axis' length: the time drawn to scale and the breaks
	busy   time.Duration // the time some process ran or some call was in flight
}

// newAxis lays out the stretch start..end around the busy spans (processes and calls): the
// stretches between them longer than the threshold become breaks.
func newAxis(start, end time.Time, busy []span) *axis {
	if end.Before(start) {
		end = start
	}
	merged := union(busy, start, end)
	a := &axis{}
	for _, s := range merged {
		a.busy += s.to.Sub(s.from)
	}
	threshold := max(minIdle, time.Duration(float64(a.busy)*idleShare))
	// The idle stretches: before the first busy span, between two, after the last.
	var gaps []span
	at := start
	for _, s := range merged {
		if s.from.Sub(at) > threshold {
			gaps = append(gaps, span{at, s.from})
		}
		at = s.to
	}
	if end.Sub(at) > threshold {
		gaps = append(gaps, span{at, end})
	}
	idle := time.Duration(0)
	for _, g := range gaps {
		idle += g.to.Sub(g.from)
	}
	scaled := end.Sub(start) - idle
	if scaled <= 0 {
		scaled = time.Millisecond
	}
	bw := time.Duration(float64(scaled) * breakShare)
	if n := time.Duration(len(gaps)); n > 0 && float64(n)*breakShare > breaksShare {
		bw = time.Duration(float64(scaled)*breaksShare) / n
	}
	bw = max(bw, time.Nanosecond)
	var off time.Duration
	at = start
	add := func(from, to time.Time, gap bool) {
		w := to.Sub(from)
		if gap {
			w = bw
		}
		a.pieces = append(a.pieces, piece{from: from, to: to, off: off, width: w, gap: gap})
		off += w
	}
	for _, g := range gaps {
		if g.from.After(at) {
			add(at, g.from, false)
		}
		add(g.from, g.to, true)
		at = g.to
	}
	if end.After(at) || len(a.pieces) == 0 {
		add(at, end, false)
	}
	a.total = max(off, time.Millisecond)
	return a
}

// union merges the spans, each cut to start..end, into disjoint ones in order.
func union(spans []span, start, end time.Time) []span {
	var in []span
	for _, s := range spans {
		if s.from.Before(start) {
			s.from = start
		}
		if s.to.After(end) {
			s.to = end
		}
		if s.to.Before(s.from) {
			s.to = s.from
		}
		in = append(in, s)
	}
	sort.Slice(in, func(i, j int) bool { return in[i].from.Before(in[j].from) })
	var out []span
	for _, s := range in {
		if n := len(out); n > 0 && !s.from.After(out[n-1].to) {
			if s.to.After(out[n-1].to) {
				out[n-1].to = s.to
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// at is where t falls on the axis, 0 to 100. A time within a break falls within its width in
// proportion (an answer given two hours into a four-hour wait is in the break's middle).
func (a *axis) at(t time.Time) float64 {
	p := a.pieces[0]
	for _, q := range a.pieces {
		if t.Before(q.from) {
			break
		}
		p = q
	}
	d := t.Sub(p.from)
	if length := p.to.Sub(p.from); p.gap && length > 0 {
		d = time.Duration(float64(d) / float64(length) * float64(p.width))
	}
	d = min(max(d, 0), p.width)
	return clamp(100 * float64(p.off+d) / float64(a.total))
}

// gaps are the breaks of the axis.
func (a *axis) gaps() []piece {
	var out []piece
	for _, p := range a.pieces {
		if p.gap {
			out = append(out, p)
		}
	}
	return out
}

// ticksAcross is how many steps the whole axis has at most.
const ticksAcross = 48

// tick is a time written on the axis.
type tick struct {
	Left  float64
	Label string
	I     int // its step within its stretch (0 the stretch's start): the page shows every nth
}

// ticks are the axis' times: each stretch drawn to scale starts with its clock time, and a
// stretch wide enough has steps within it, a round duration apart, written from its start:
// enough for a zoomed-in page to show some (the page hides those that would overlap).
func (a *axis) ticks() []tick {
	var out []tick
	for _, p := range a.pieces {
		if p.gap {
			continue
		}
		out = append(out, tick{Left: a.at(p.from), Label: p.from.UTC().Format("15:04:05")})
		share := float64(p.width) / float64(a.total)
		n := int(share * ticksAcross)
		if n < 2 {
			continue
		}
		step := roundStep(p.width / time.Duration(n))
		for i, d := 1, step; d < p.width-step/2; i, d = i+1, d+step {
			out = append(out, tick{Left: a.at(p.from.Add(d)), Label: "+" + short(d), I: i})
		}
	}
	return out
}

// roundStep is the round duration (1, 2 or 5 of a power of ten, or minutes and hours) at or
// above d.
func roundStep(d time.Duration) time.Duration {
	for _, s := range []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
		30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour} {
		if d <= s && d > 30*time.Second {
			return s
		}
	}
	if d > 24*time.Hour {
		return d.Round(time.Hour)
	}
	for s := time.Duration(1); ; s *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if m*s >= d {
				return m * s
			}
		}
	}
}

// short writes a duration as a person reads it: 9h 12m, 3m 5s, 42s, 1.5s, 250ms.
func short(d time.Duration) string {
	switch {
	case d >= 24*time.Hour:
		d = d.Round(time.Hour)
		return join(int(d/(24*time.Hour)), "d", int(d%(24*time.Hour)/time.Hour), "h")
	case d >= time.Hour:
		d = d.Round(time.Minute)
		return join(int(d/time.Hour), "h", int(d%time.Hour/time.Minute), "m")
	case d >= time.Minute:
		d = d.Round(time.Second)
		return join(int(d/time.Minute), "m", int(d%time.Minute/time.Second), "s")
	case d >= 10*time.Second:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d >= time.Second:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", d.Seconds()), ".0") + "s"
	default:
		return fmt.Sprintf("%dms", d.Round(time.Millisecond)/time.Millisecond)
	}
}

func join(a int, au string, b int, bu string) string {
	if b == 0 {
		return fmt.Sprint(a, au)
	}
	return fmt.Sprint(a, au, " ", b, bu)
}

// gapLabel names an idle stretch by what the process before it ended as.
func gapLabel(endedAs string, d time.Duration) string {
	switch endedAs {
	case "paused":
		return "paused " + short(d)
	case "waiting_decision":
		return "waited " + short(d) + " for an answer"
	case "waiting_verdict":
		return "waited " + short(d) + " for a verdict"
	case "waiting_resume":
		return "waited " + short(d) + " for a resume"
	case "crashed":
		return "crashed, idle " + short(d)
	}
	return "idle " + short(d)
}

// Labels of a bar. The page writes the longest of a bar's labels that fits its width (the
// same rule as fit, in its script), and none when not even the call id fits; its title
// always holds it all.
const (
	labelCharPx = 6.6 // an 11px monospace character
	labelPadPx  = 8
)

// labels are a call's labels, longest first: "c12 reviewer completed", "c12 reviewer", "c12".
func labels(id, role, status string) []string {
	return []string{id + " " + role + " " + status, id + " " + role, id}
}

// fit is the longest label that fits px, or "".
func fit(labels []string, px float64) string {
	for _, l := range labels {
		if float64(len([]rune(l)))*labelCharPx+labelPadPx <= px {
			return l
		}
	}
	return ""
}
