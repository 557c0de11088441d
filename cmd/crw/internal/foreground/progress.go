package foreground

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/journal"
)

// progressLine shows a run's calls as they go: one redrawn line on a terminal, plain lines
// otherwise. Script output is written between them.
type progressLine struct {
	mu     sync.Mutex
	w      io.Writer
	tty    bool
	quiet  bool
	line   bool // a status line is drawn and must be cleared before other output
	last   progress.Event
	drawn  time.Time
	run    string
	verb   string // what the first line says of the run: started, resumed or followed
	start  time.Time
	closed bool
	stop   chan struct{}
	// inflight are the calls started and not ended, by id, as this process's events tell them.
	inflight map[string]inflight
	// replayed are the ends of calls a replay took from the journal since the last line was
	// written, by status: they are written as one line when the next line is (a resume of
	// 10,000 calls writes one, not 10,000). lastReplayed is the latest, written as its own
	// line when it is the only one.
	replayed     map[journal.CallStatus]int
	lastReplayed progress.Event
}

// inflight is a call under way, as the status line names it.
type inflight struct {
	role, node string
	since      time.Time
}

// maxNamed bounds the calls under way the status line names.
const maxNamed = 3

func newProgressLine(w io.Writer, tty, quiet bool) *progressLine {
	p := &progressLine{w: w, tty: tty, quiet: quiet, start: time.Now(), stop: make(chan struct{}), inflight: map[string]inflight{}, verb: "started"}
	if tty && !quiet {
		// Redraw while calls are slow, so the elapsed time moves.
		go func() {
			t := time.NewTicker(500 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-p.stop:
					return
				case <-t.C:
					p.mu.Lock()
					if !p.closed && p.run != "" {
						p.draw()
					}
					p.mu.Unlock()
				}
			}
		}()
	}
	return p
}

func (p *progressLine) started(run string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.run = run
	if !p.quiet && !p.tty {
		fmt.Fprintf(p.w, "run %s %s\n", run, p.verb)
	}
}

func (p *progressLine) event(e progress.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.quiet || p.closed {
		return
	}
	if e.Kind == progress.EventWarning {
		p.clear()
		p.writeReplayed()
		fmt.Fprintf(p.w, "warning: %s\n", e.Detail)
		p.redraw()
		return
	}
	switch e.Kind {
	case progress.EventCallStarted:
		p.inflight[e.Call] = inflight{role: e.Role, node: e.Node, since: time.Now()}
	case progress.EventCallEnded:
		delete(p.inflight, e.Call)
	}
	p.last = e
	if e.Kind == progress.EventCallEnded && e.Replayed && slices.Contains(journal.Statuses, e.Status) {
		if p.replayed == nil {
			p.replayed = map[journal.CallStatus]int{}
		}
		p.replayed[e.Status]++
		p.lastReplayed = e
	} else if e.Kind == progress.EventCallEnded {
		// On a terminal too: above the status line, which is drawn again below it.
		p.clear()
		p.writeReplayed()
		fmt.Fprintln(p.w, callLine(e))
		p.redraw()
		return
	}
	if p.tty && (time.Since(p.drawn) > 50*time.Millisecond || e.Kind == progress.EventEnded) {
		// Redraw at most 20 times a second; the final state is drawn by done.
		p.draw()
	}
}

// callLine is the line of a call's end.
func callLine(e progress.Event) string {
	line := fmt.Sprintf("call %s %s/%s %s", e.Call, e.Role, e.Node, e.Status)
	if e.Role == "" && e.Node == "" {
		// A follow that did not read its start (prepared too far back) knows neither.
		line = fmt.Sprintf("call %s %s", e.Call, e.Status)
	}
	if e.Reason != "" {
		line += " (" + e.Reason + ")"
	}
	if e.Replayed {
		line += ", from the journal"
	}
	return line
}

// writeReplayed writes the line of the calls a replay took from the journal since the last
// line: the call's own line when it is one, else how many there were of each status.
func (p *progressLine) writeReplayed() {
	n := 0
	var parts []string
	for _, status := range journal.Statuses {
		if c := p.replayed[status]; c > 0 {
			n += c
			parts = append(parts, fmt.Sprintf("%d %s", c, status))
		}
	}
	switch {
	case n == 1:
		fmt.Fprintln(p.w, callLine(p.lastReplayed))
	case n > 1:
		fmt.Fprintf(p.w, "%d calls from the journal: %s\n", n, strings.Join(parts, ", "))
	}
	clear(p.replayed)
}

// writeLine writes a line of its own, after the calls' lines before it.
func (p *progressLine) writeLine(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.writeReplayed()
	fmt.Fprintln(p.w, line)
	p.redraw()
}

// redraw draws the status line again on a terminal.
func (p *progressLine) redraw() {
	if p.tty && p.run != "" {
		p.draw()
	}
}

func (p *progressLine) draw() {
	named, n := p.calls()
	fmt.Fprintf(p.w, "\r\x1b[K%s", summary(p.run, p.last, named, n, time.Since(p.start)))
	p.line = true
	p.drawn = time.Now()
}

// calls names the calls under way, longest first, and how many there are (-1: this process
// does not know them: it follows a run another process holds).
func (p *progressLine) calls() (named []string, n int) {
	if len(p.inflight) == 0 && p.last.Kind == progress.EventProgress {
		return nil, -1
	}
	ids := make([]string, 0, len(p.inflight))
	for id := range p.inflight {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return p.inflight[a].since.Compare(p.inflight[b].since) })
	for _, id := range ids {
		if len(named) == maxNamed {
			break
		}
		c := p.inflight[id]
		named = append(named, fmt.Sprintf("%s %s/%s %s", id, c.role, c.node, time.Since(c.since).Round(100*time.Millisecond)))
	}
	return named, len(ids)
}

func summary(run string, e progress.Event, named []string, inFlight int, elapsed time.Duration) string {
	done := 0
	var parts []string
	for _, k := range journal.Statuses {
		done += e.Calls[k]
		if k != journal.StatusCompleted && e.Calls[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", e.Calls[k], k))
		}
	}
	if inFlight < 0 {
		inFlight = e.InFlight
	}
	s := fmt.Sprintf("run %s  %d in flight", run, inFlight)
	if len(named) > 0 {
		s += " (" + strings.Join(named, ", ")
		if inFlight > len(named) {
			s += fmt.Sprintf(", +%d", inFlight-len(named))
		}
		s += ")"
	}
	s += fmt.Sprintf("  %d done", done)
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s + fmt.Sprintf("  %d tokens  %s", e.Tokens.Total, elapsed.Round(100*time.Millisecond))
}

func (p *progressLine) clear() {
	if p.line {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.line = false
	}
}

// logWriter is where the script's console goes: above the status line.
func (p *progressLine) logWriter() io.Writer { return logWriter{p} }

type logWriter struct{ p *progressLine }

func (l logWriter) Write(b []byte) (int, error) {
	p := l.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.writeReplayed()
	n, err := p.w.Write(b)
	if p.tty && !p.closed && p.run != "" {
		p.draw()
	}
	return n, err
}

func (p *progressLine) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		close(p.stop)
	}
	if !p.quiet && !p.closed {
		p.clear()
		p.writeReplayed()
	}
	if p.tty && !p.quiet && p.run != "" {
		p.draw()
		fmt.Fprintln(p.w)
		p.line = false
	}
	p.closed = true
}
