// Package htmlview renders a run's journal as one self-contained HTML page (crw flow show
// --html): a summary strip (calls per status, tokens, processes, wall and active time), a lane
// per node with each call a labelled bar from its start to its end coloured by its status, its
// turns and repair inside it, continuations as links to the call they continue, held and
// unknown calls and the pause marked, decisions and verdicts waited for in lanes of their own,
// idle stretches between processes drawn as breaks labelled with their length (layout.go),
// zoom and pan, and a details panel: the run's summary, or the clicked call's prompt, answer,
// tokens and rows. The page loads nothing: its style and script are inline.
package htmlview

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/crw-dev/crw/engine/result"
	"github.com/crw-dev/crw/journal"
)

//go:embed page.html
var pageText string

// page is parsed when a page is first drawn, not at every start of the command (~0.5 ms and
// 1,100 allocations, which every crw flow status would pay).
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"pct": func(f float64) string { return fmt.Sprintf("%.3f%%", f) },
	}).Parse(pageText))
})

// Options are how a page is drawn.
type Options struct {
	// Live: the run goes on; the page reloads itself every few seconds (a file rewritten by
	// crw flow show --html --follow shows the run as it goes).
	Live bool
	// Now is where a live run's open calls end on the page (default: the last row's time).
	Now time.Time
}

// Limits of a page: the calls it draws, and what each call's details carry.
const (
	MaxCalls     = 5000
	maxRowsBytes = 64 << 10
	// maxPageDetail bounds all the calls' details together: past it a call's rows are left to
	// crw flow show RUN CALL and its prompt and answer are cut short, so a page of thousands of
	// calls stays a page.
	maxPageDetail = 16 << 20
	shortText     = 256
	maxTextBytes  = 16 << 10
	minBarPercent = 0.15
	rowHeight     = 22
)

// statuses are the calls' statuses in the order the summary and legend give them.
var statuses = []string{"completed", "null_model", "held", "refused", "unknown", "superseded", "open"}

type view struct {
	Run, Workflow, Backend, Status string
	Live                           bool
	Started, Wall, Active          string
	Lanes                          []*lane // a lane per node, then the decisions' and verdicts'
	Names                          int     // the width of the lanes' names, in px
	Marks                          []mark
	Gaps                           []gapMark
	Ticks                          []tick
	Counts                         []count
	Calls, More, Processes         int
	Tokens                         journal.Tokens
	Waits                          []*bar // the decisions and verdicts, for the summary
	Details                        template.JS
}

type count struct {
	Status string
	N      int
}

// gapMark is an idle stretch drawn as a break.
type gapMark struct {
	Left, Width  float64
	Label, Title string
}

type lane struct {
	Node   string
	Label  string // the node as its lane's name shows it: whole, or its ends around an ellipsis
	Kind   string // "" a node's calls; "waits" decisions or verdicts
	Bars   []*bar
	Ghosts []*bar // earlier generations of its calls (a pause held them; a resume ran them again)
	Height int    // in px: one row of bars for each set of calls under way at once
	ends   []float64
}

// place puts a bar on the lane's first row where nothing is drawn yet at its left.
func (l *lane) place(left, right float64) int {
	for i, e := range l.ends {
		if e <= left {
			l.ends[i] = right
			return i
		}
	}
	l.ends = append(l.ends, right)
	return len(l.ends) - 1
}

type bar struct {
	Call, Status, Class, Title, Continues, Flag string
	Labels                                      string // its labels, longest first, | between
	Left, Width                                 float64
	Top                                         int // px within the lane
	Segments                                    []segment
}

type segment struct {
	Class, Title string
	Left, Width  float64
}

type mark struct {
	Class, Title string
	Left         float64
}

// detail is what a click on a call, a decision or a verdict shows.
type detail struct {
	Call      string            `json:"call"`
	Kind      string            `json:"kind,omitempty"` // "" a call; decision; verdict
	Role      string            `json:"role,omitempty"`
	Node      string            `json:"node,omitempty"`
	Status    string            `json:"status"`
	Reason    string            `json:"reason,omitempty"`
	Detail    string            `json:"detail,omitempty"`
	Continues string            `json:"continues,omitempty"`
	When      string            `json:"when,omitempty"` // its start, its length, its wait for a slot
	Tokens    *journal.Tokens   `json:"tokens,omitempty"`
	TurnIDs   []string          `json:"turn_ids,omitempty"`
	Attempts  int               `json:"attempts,omitempty"`
	Prompt    string            `json:"prompt,omitempty"`
	Answer    string            `json:"answer,omitempty"`
	By        string            `json:"by,omitempty"`
	Rows      []json.RawMessage `json:"rows,omitempty"`
	Clipped   bool              `json:"clipped,omitempty"`
}

type call struct {
	gens                                         []generation // the call's earlier generations
	id, role, node, status, reason, text, handle string
	start, end                                   time.Time
	turns                                        []turn
	turnIDs                                      []string
	tokens                                       journal.Tokens
	rows                                         []json.RawMessage
	rowBytes                                     int
	clipped                                      bool
	prompt                                       string
	output                                       json.RawMessage
}

type turn struct {
	k  int
	at time.Time
}

// generation is an earlier generation of a call, as a ghost bar shows it.
type generation struct {
	status, reason string
	start, end     time.Time
}

// process is one process of the run, from its started row to its ended row (a process that
// died without one: its last row, "crashed").
type process struct {
	from, to time.Time
	status   string
}

// wait is a decision or a verdict the run waited for, from its request (a verdict: the
// unknown end of its call) to its answer, if it has one.
type wait struct {
	kind, id, node, question, by, verdict string
	from, to                              time.Time
	answer                                json.RawMessage
}

// Render writes the page of a run's rows.
func Render(w io.Writer, rows []journal.Row, opts Options) error {
	v := &view{Status: "running", Live: opts.Live}
	budget := maxPageDetail
	j := v.read(rows, &budget)
	end := j.last
	if j.ended != nil {
		v.Status = j.ended.Status
		if v.Status != "paused" && v.Status != "waiting_decision" {
			v.Live = false
		}
	} else if !opts.Now.IsZero() && opts.Now.After(end) {
		end = opts.Now
	}
	j.closeProcess(end, "")
	var busy []span
	for _, p := range j.procs {
		busy = append(busy, span{p.from, p.to})
	}
	for _, c := range j.order {
		if !c.end.IsZero() {
			busy = append(busy, span{c.start, c.end})
		}
	}
	ax := newAxis(j.start, end, busy)
	v.Started, v.Calls, v.Processes = j.start.UTC().Format(time.RFC3339), len(j.order), len(j.procs)
	v.Wall, v.Active = short(end.Sub(j.start)), short(ax.busy)
	v.Ticks = ax.ticks()
	for _, g := range ax.gaps() {
		label := gapLabel(j.endedAs(g.from), g.to.Sub(g.from))
		v.Gaps = append(v.Gaps, gapMark{Left: ax.at(g.from), Width: ax.at(g.to) - ax.at(g.from), Label: label,
			Title: fmt.Sprintf("%s: from %s to %s, drawn shortened", label, clock(g.from), clock(g.to))})
	}

	lanes := map[string]*lane{}
	details := map[string]detail{}
	counts := map[string]int{}
	for _, c := range j.order {
		l := lanes[c.node]
		if l == nil {
			l = &lane{Node: c.node}
			lanes[c.node] = l
			v.Lanes = append(v.Lanes, l)
		}
		d := v.addCall(c, l, ax.at, end, &budget)
		counts[d.Status]++
		details[c.id] = d
	}
	for _, s := range statuses {
		if counts[s] > 0 {
			v.Counts = append(v.Counts, count{s, counts[s]})
		}
	}
	for _, kind := range []string{"decision", "verdict"} {
		l := &lane{Node: kind + "s", Kind: "waits"}
		for _, wt := range j.waits {
			if wt.kind == kind {
				b, d := addWait(wt, l, ax.at, end, &budget)
				details[b.Call] = d
				v.Waits = append(v.Waits, b)
			}
		}
		if len(l.Bars) > 0 {
			v.Lanes = append(v.Lanes, l)
		}
	}
	longest := 0
	for _, l := range v.Lanes {
		l.Height = rowHeight*max(len(l.ends), 1) + 4
		l.Label = laneLabel(l.Node)
		longest = max(longest, utf8.RuneCountInString(l.Label))
	}
	v.Names = min(max(minNames, longest*nameCharPx+nameMarginPx), maxNames)
	v.addMarks(j, ax.at)
	// encoding/json writes <, > and & as \u escapes: the blob cannot end its script element.
	blob, err := json.Marshal(details)
	if err != nil {
		return err
	}
	v.Details = template.JS(blob)
	return page().Execute(w, v)
}

// journalRead is what the page takes of a run's rows.
type journalRead struct {
	start, last time.Time
	order       []*call       // the calls, as the journal first prepares them
	pauses      []journal.Row // quota_or_rate escalations
	processes   []journal.Row // ended rows of processes before the last
	ended       *journal.Row  // the last process's
	procs       []process
	open        *process         // the process whose ended row is still to come
	inFlight    map[string]*call // calls with no terminal row yet
	waits       []*wait
}

// read goes through the rows once: the run's own, each call's generations, turns and end,
// the processes, the decisions and verdicts waited for.
func (v *view) read(rows []journal.Row, budget *int) *journalRead {
	j := &journalRead{inFlight: map[string]*call{}}
	byID := map[string]*call{}
	waits := map[string]*wait{}
	for i := range rows {
		r := &rows[i]
		if j.start.IsZero() || (r.Type == journal.TypeStarted && v.Run == "") {
			if r.Type == journal.TypeStarted {
				v.Run, v.Workflow, v.Backend = r.Run, r.Workflow, r.Backend
			}
			if j.start.IsZero() {
				j.start = r.At
			}
		}
		prev := j.last
		if r.At.After(j.last) {
			j.last = r.At
		}
		switch {
		case r.Type == journal.TypeStarted:
			// A process still open when the next starts died without its ended row.
			j.closeProcess(prev, "crashed")
			j.open = &process{from: r.At}
		case r.Type == journal.TypeEnded:
			if j.ended != nil {
				j.processes = append(j.processes, *j.ended)
			}
			j.ended = r
			as := r.Status
			if as == "waiting_decision" && r.Rare != nil && len(r.Awaited) > 0 && !j.decisionOpen() {
				as = "waiting_verdict" // crw.effect: no decision asked, a verdict awaited
			}
			j.closeProcess(r.At, as)
		case r.Type == journal.TypeEscalation && r.Reason == "quota_or_rate":
			j.pauses = append(j.pauses, *r)
		case r.Type == journal.TypeDecisionRequested:
			if waits["decision:"+r.DecisionID] == nil {
				w := &wait{kind: "decision", id: r.DecisionID, node: r.Node, question: r.Question, from: r.At}
				waits["decision:"+r.DecisionID] = w
				j.waits = append(j.waits, w)
			}
		case r.Type == journal.TypeDecisionAnswered:
			if w := waits["decision:"+r.DecisionID]; w != nil && w.to.IsZero() {
				w.to, w.answer, w.by = r.At, r.Output, r.By
			}
		case r.Type == journal.TypeEffectReconciled:
			if w := waits["verdict:"+r.Effect]; w != nil && w.to.IsZero() {
				w.to, w.answer, w.by, w.verdict = r.At, r.Output, r.By, r.Verdict
			}
		case r.Call == "" || r.Type == journal.TypeWarning || r.Type == journal.TypeEscalation:
		case r.Type == journal.TypePrepared:
			c := byID[r.Call]
			if c == nil {
				if len(j.order) >= MaxCalls {
					v.More++
					continue
				}
				c = &call{id: r.Call}
				byID[r.Call] = c
				j.order = append(j.order, c)
			}
			// A new generation of the call (a resume ran it again) is the call now.
			gens := c.gens
			if !c.start.IsZero() {
				gens = append(gens, generation{status: c.status, reason: c.reason, start: c.start, end: c.end})
			}
			*c = call{id: r.Call, role: r.Role, node: r.Node, start: r.At, prompt: r.Prompt, handle: r.Handle, gens: gens}
			c.addRow(r, budget)
			j.inFlight[c.id] = c
		default:
			if c := byID[r.Call]; c != nil {
				c.take(r, budget)
				if journal.IsTerminal(r.Type) {
					delete(j.inFlight, c.id)
					if r.Type == journal.TypeOutcomeUnknown && waits["verdict:"+c.id] == nil {
						w := &wait{kind: "verdict", id: c.id, node: c.node, from: r.At}
						waits["verdict:"+c.id] = w
						j.waits = append(j.waits, w)
					}
				}
			}
		}
	}
	return j
}

// closeProcess ends the open process at t; the calls it left in flight end there too.
func (j *journalRead) closeProcess(t time.Time, status string) {
	if j.open == nil {
		return
	}
	j.open.to, j.open.status = t, status
	j.procs = append(j.procs, *j.open)
	j.open = nil
	if status == "" {
		return // the run goes on: its calls in flight are drawn to its end
	}
	for id, c := range j.inFlight {
		c.end = t
		delete(j.inFlight, id)
	}
}

// decisionOpen reports whether a decision asked is still unanswered.
func (j *journalRead) decisionOpen() bool {
	for _, w := range j.waits {
		if w.kind == "decision" && w.to.IsZero() {
			return true
		}
	}
	return false
}

// endedAs is how the last process that ended at or before t ended.
func (j *journalRead) endedAs(t time.Time) string {
	as := ""
	for _, p := range j.procs {
		if !p.to.After(t) {
			as = p.status
		}
	}
	return as
}

// take adds a row of the call after its prepared row.
func (c *call) take(r *journal.Row, budget *int) {
	c.addRow(r, budget)
	switch {
	case r.Type == journal.TypeTurnStarted:
		c.turns = append(c.turns, turn{k: r.K, at: r.At})
		if r.TurnID != "" {
			c.turnIDs = append(c.turnIDs, r.TurnID)
		}
	case journal.IsTerminal(r.Type):
		c.status, c.reason, c.text, c.end, c.output = string(journal.StatusOf(r.Type)), r.Reason, r.Detail, r.At, r.Output
		if r.Tokens != nil {
			c.tokens = *r.Tokens
		}
		if len(r.TurnIDs) > 0 {
			c.turnIDs = r.TurnIDs
		}
	}
}

// addCall puts a call's bar, and the ghosts of its earlier generations, in its lane, and
// returns what a click on it shows. An open call runs to end; one whose process ended before
// it did, to that end.
func (v *view) addCall(c *call, l *lane, at func(time.Time) float64, end time.Time, budget *int) detail {
	cend := c.end
	status := c.status
	if status == "" {
		status = "open"
		if cend.IsZero() {
			cend = end
		}
	}
	b := &bar{Call: c.id, Status: status, Left: at(c.start)}
	b.Width = max(at(cend)-b.Left, minBarPercent)
	b.Top = rowHeight * l.place(b.Left, b.Left+b.Width)
	for _, g := range c.gens {
		gend := g.end
		if gend.IsZero() {
			gend = c.start
		}
		gb := &bar{Call: c.id, Status: g.status, Class: "ghost status-" + g.status, Left: at(g.start),
			Title: fmt.Sprintf("%s, an earlier attempt: %s%s", c.id, g.status, paren(g.reason))}
		gb.Width = max(at(gend)-gb.Left, minBarPercent)
		gb.Top = rowHeight * l.place(gb.Left, gb.Left+gb.Width)
		l.Ghosts = append(l.Ghosts, gb)
	}
	b.Class = "bar status-" + status
	switch status {
	case "held", "unknown":
		b.Flag = map[string]string{"held": "⏸", "unknown": "?"}[status]
	}
	if _, cont, ok := result.ParseHandle(c.handle); ok {
		b.Continues = cont
	}
	b.Labels = strings.Join(labels(c.id, c.role, status), "|")
	dur := cend.Sub(c.start)
	when := fmt.Sprintf("%s, from %s", short(dur), clock(c.start))
	if len(c.turns) > 0 {
		when += fmt.Sprintf("; %s waiting for a slot", short(c.turns[0].at.Sub(c.start)))
	}
	b.Title = fmt.Sprintf("%s %s/%s %s%s\n%s\n%d tokens (input %d, output %d)", c.id, c.role, c.node, status, paren(c.reason),
		when, c.tokens.Total, c.tokens.Input, c.tokens.Output)
	v.Tokens.Input += c.tokens.Input
	v.Tokens.Output += c.tokens.Output
	v.Tokens.Total += c.tokens.Total
	b.Segments = c.segments(cend, dur)
	l.Bars = append(l.Bars, b)
	tokens := c.tokens
	d := detail{Call: c.id, Role: c.role, Node: c.node, Status: status, Reason: c.reason, Detail: c.text,
		Continues: b.Continues, When: when, Tokens: &tokens, TurnIDs: c.turnIDs, Attempts: len(c.gens) + 1,
		Prompt: text(c.prompt, budget), Rows: c.rows, Clipped: c.clipped}
	if len(c.output) > 0 {
		d.Answer = text(string(c.output), budget)
	}
	if d.Rows == nil {
		d.Rows = []json.RawMessage{}
	}
	return d
}

// addWait puts a decision's or a verdict's wait in its lane: from its request to its answer,
// or to the run's end while it has none.
func addWait(w *wait, l *lane, at func(time.Time) float64, end time.Time, budget *int) (*bar, detail) {
	to, status := w.to, "answered"
	if w.kind == "verdict" && w.verdict != "" {
		status = w.verdict
	}
	if to.IsZero() {
		to, status = end, "waiting"
	}
	key := w.kind + ":" + w.id
	b := &bar{Call: key, Status: status, Class: "bar wait " + w.kind + " wait-" + status, Left: at(w.from)}
	b.Width = max(at(to)-b.Left, minBarPercent)
	b.Top = rowHeight * l.place(b.Left, b.Left+b.Width)
	name := w.id
	if w.kind == "verdict" {
		name = w.id + " verdict"
	}
	b.Labels = strings.Join([]string{name + " " + status, name, w.id}, "|")
	when := fmt.Sprintf("%s, from %s", short(to.Sub(w.from)), clock(w.from))
	b.Title = fmt.Sprintf("%s %s: %s\n%s", w.kind, name, status, when)
	if w.question != "" {
		b.Title += "\n" + w.question
	}
	d := detail{Call: key, Kind: w.kind, Node: w.node, Status: status, When: when, Prompt: text(w.question, budget), By: w.by}
	if w.kind == "verdict" {
		d.Prompt = "the outcome of " + w.id + " is unknown: crw flow recover decides whether its turn ran"
	}
	if len(w.answer) > 0 {
		d.Answer = text(string(w.answer), budget)
	}
	l.Bars = append(l.Bars, b)
	return b, d
}

// segments are the call's turns within its bar, which lasts dur and ends at cend.
func (c *call) segments(cend time.Time, dur time.Duration) []segment {
	var out []segment
	for i, t := range c.turns {
		tend := cend
		if i+1 < len(c.turns) {
			tend = c.turns[i+1].at
		}
		class, name := "turn", "task turn"
		if t.k > 1 {
			class, name = "turn repair", "repair turn"
		}
		seg := segment{Class: class, Title: fmt.Sprintf("%s %d, %s", name, t.k, tend.Sub(t.at).Round(time.Millisecond))}
		if dur > 0 {
			seg.Left = clamp(100 * float64(t.at.Sub(c.start)) / float64(dur))
			seg.Width = clamp(100 * float64(tend.Sub(t.at)) / float64(dur))
		}
		out = append(out, seg)
	}
	return out
}

// addMarks marks the pauses, the ends of earlier processes and the last one's end.
func (v *view) addMarks(j *journalRead, at func(time.Time) float64) {
	for _, p := range j.pauses {
		v.Marks = append(v.Marks, mark{Class: "mark pause", Left: at(p.At), Title: "paused: " + p.Detail})
	}
	for _, p := range j.processes {
		v.Marks = append(v.Marks, mark{Class: "mark process", Left: at(p.At), Title: "a process of the run ended " + p.Status + "; a resume went on"})
	}
	if j.ended != nil {
		v.Marks = append(v.Marks, mark{Class: "mark end", Left: at(j.ended.At), Title: "the run's process ended " + j.ended.Status})
	}
}

func (c *call) addRow(r *journal.Row, budget *int) {
	if c.clipped {
		return
	}
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	if c.rowBytes+len(b) > maxRowsBytes || len(b) > *budget {
		c.clipped = true
		return
	}
	c.rowBytes += len(b)
	*budget -= len(b)
	c.rows = append(c.rows, b)
}

// text is a prompt or answer for a call's details: clipped, and shorter still once the page's
// budget is spent.
func text(s string, budget *int) string {
	s = clip(s)
	if len(s) > *budget {
		s = strings.ToValidUTF8(s[:min(len(s), shortText)], "") + "…"
	}
	*budget -= min(len(s), *budget)
	return s
}

func clock(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") }

func clamp(f float64) float64 { return min(max(f, 0), 100) }

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func clip(s string) string {
	if len(s) <= maxTextBytes {
		return s
	}
	return strings.ToValidUTF8(s[:maxTextBytes], "") + "…"
}

// The lanes' names column: as wide as the longest name needs (about 7 px a character of its
// 12 px font, and its padding), within bounds. A name longer than maxLabel characters shows its
// ends around an ellipsis: a fan-out's nodes differ most often at their ends
// (review-auth-correctness, review-auth-security), which a cut at the right would hide.
const (
	minNames     = 110
	maxNames     = 240
	nameCharPx   = 7
	nameMarginPx = 18
	maxLabel     = 31
)

// laneLabel is a node's name as its lane shows it (its title keeps it whole).
func laneLabel(node string) string {
	r := []rune(node)
	if len(r) <= maxLabel {
		return node
	}
	head := (maxLabel - 1) / 2
	tail := maxLabel - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}
