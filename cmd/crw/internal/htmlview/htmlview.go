// Package htmlview renders a run's journal as one self-contained HTML page (crw flow show
// --html): a lane per node, each call a bar from its start to its end coloured by its status,
// its turns and repair inside it, continuations as links to the call they continue, held and
// unknown calls and the pause marked, times and tokens on hover, and the call's rows, prompt
// and answer on click. The page loads nothing: its style and script are inline.
package htmlview

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/crw-dev/crw/engine/result"
	"github.com/crw-dev/crw/journal"
)

//go:embed page.html
var pageText string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"pct": func(f float64) string { return fmt.Sprintf("%.3f%%", f) },
}).Parse(pageText))

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
	rowHeight     = 20
)

type view struct {
	Run, Workflow, Backend, Status string
	Live                           bool
	Started, Span                  string
	Lanes                          []*lane
	Marks                          []mark
	Calls                          int
	More                           int
	Tokens                         int64
	Details                        template.JS
}

type lane struct {
	Node   string
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

// detail is what a click on a call shows.
type detail struct {
	Call      string            `json:"call"`
	Role      string            `json:"role"`
	Node      string            `json:"node"`
	Status    string            `json:"status"`
	Reason    string            `json:"reason,omitempty"`
	Detail    string            `json:"detail,omitempty"`
	Continues string            `json:"continues,omitempty"`
	Prompt    string            `json:"prompt"`
	Answer    string            `json:"answer,omitempty"`
	Rows      []json.RawMessage `json:"rows"`
	Clipped   bool              `json:"clipped,omitempty"`
}

type call struct {
	gens                                         []generation // the call's earlier generations
	id, role, node, status, reason, text, handle string
	start, end                                   time.Time
	turns                                        []turn
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
	span := end.Sub(j.start)
	if span <= 0 {
		span = time.Millisecond
	}
	at := func(t time.Time) float64 { return clamp(100 * float64(t.Sub(j.start)) / float64(span)) }
	v.Started, v.Span, v.Calls = j.start.UTC().Format(time.RFC3339), span.Round(time.Millisecond).String(), len(j.order)

	lanes := map[string]*lane{}
	details := map[string]detail{}
	for _, c := range j.order {
		l := lanes[c.node]
		if l == nil {
			l = &lane{Node: c.node}
			lanes[c.node] = l
			v.Lanes = append(v.Lanes, l)
		}
		details[c.id] = v.addCall(c, l, at, end, &budget)
	}
	for _, l := range v.Lanes {
		l.Height = rowHeight*max(len(l.ends), 1) + 4
	}
	v.addMarks(j, at)
	// encoding/json writes <, > and & as \u escapes: the blob cannot end its script element.
	blob, err := json.Marshal(details)
	if err != nil {
		return err
	}
	v.Details = template.JS(blob)
	return page.Execute(w, v)
}

// journalRead is what the page takes of a run's rows.
type journalRead struct {
	start, last       time.Time
	order             []*call       // the calls, as the journal first prepares them
	pauses, processes []journal.Row // quota_or_rate escalations; ended rows of processes before the last
	ended             *journal.Row  // the last process's
}

// read goes through the rows once: the run's own, each call's generations, turns and end.
func (v *view) read(rows []journal.Row, budget *int) *journalRead {
	j := &journalRead{}
	byID := map[string]*call{}
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
		if r.At.After(j.last) {
			j.last = r.At
		}
		switch {
		case r.Type == journal.TypeEnded:
			if j.ended != nil {
				j.processes = append(j.processes, *j.ended)
			}
			j.ended = r
		case r.Type == journal.TypeEscalation && r.Reason == "quota_or_rate":
			j.pauses = append(j.pauses, *r)
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
		default:
			if c := byID[r.Call]; c != nil {
				c.take(r, budget)
			}
		}
	}
	return j
}

// take adds a row of the call after its prepared row.
func (c *call) take(r *journal.Row, budget *int) {
	c.addRow(r, budget)
	switch {
	case r.Type == journal.TypeTurnStarted:
		c.turns = append(c.turns, turn{k: r.K, at: r.At})
	case journal.IsTerminal(r.Type):
		c.status, c.reason, c.text, c.end, c.output = string(journal.StatusOf(r.Type)), r.Reason, r.Detail, r.At, r.Output
		if r.Tokens != nil {
			c.tokens = *r.Tokens
		}
	}
}

// addCall puts a call's bar, and the ghosts of its earlier generations, in its lane, and
// returns what a click on it shows. An open call runs to end.
func (v *view) addCall(c *call, l *lane, at func(time.Time) float64, end time.Time, budget *int) detail {
	cend := c.end
	status := c.status
	if status == "" {
		status, cend = "open", end
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
		b.Flag = map[string]string{"held": "held", "unknown": "?"}[status]
	}
	if _, cont, ok := result.ParseHandle(c.handle); ok {
		b.Continues = cont
	}
	dur := cend.Sub(c.start)
	b.Title = fmt.Sprintf("%s %s/%s %s%s\n%s, from %s\n%d tokens (input %d, output %d)", c.id, c.role, c.node, status, paren(c.reason),
		dur.Round(time.Millisecond), c.start.UTC().Format("15:04:05.000"), c.tokens.Total, c.tokens.Input, c.tokens.Output)
	v.Tokens += c.tokens.Total
	b.Segments = c.segments(cend, dur)
	l.Bars = append(l.Bars, b)
	d := detail{Call: c.id, Role: c.role, Node: c.node, Status: status, Reason: c.reason, Detail: c.text,
		Continues: b.Continues, Prompt: text(c.prompt, budget), Rows: c.rows, Clipped: c.clipped}
	if len(c.output) > 0 {
		d.Answer = text(string(c.output), budget)
	}
	if d.Rows == nil {
		d.Rows = []json.RawMessage{}
	}
	return d
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
