package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/wire"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/cmd/crw/internal/runlog"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/timeline"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Facts are the server's own facts, as capabilities tells them.
type Facts struct {
	Name, Version string
	// State is the state folder; Store where the runs live ("" the state folder).
	State, Store string
}

// The bounds of the reads: a page holds at most maxPage of its items, a call's prompt or
// answer and a trace row at most maxBody bytes, a trace page at most maxTracePage.
const (
	maxPage      = 1000
	maxBody      = 1 << 20
	maxTracePage = 4 << 20
)

// browseTools are the tools that find a run and read it: list, show, logs, trace, and the
// capability descriptor.
func (rs *runs) browseTools(backends *backend.Registry, facts Facts, names func() []string) []Tool {
	return []Tool{
		define(Tool{Name: "list", Title: "The runs, newest first", Payload: "page",
			Description: `The runs of the state folder, a page of the newest at a time, newest first, as crw flow list ` +
				`--json gives them: each where it stands, as status answers it. status keeps the runs of the statuses ` +
				`(how a run's last process ended it) or states named; limit the newest of those (default 100); next is ` +
				`the run to give before for the page of older runs (null when none is left). Reads only.` + onError,
			input: func(in map[string]any) {
				limits(1, maxPage)(in)
				items := property(in, "status")["items"].(map[string]any)
				// paused and waiting_decision are a status and a state alike: each listed once.
				items["enum"] = toAny(slices.Compact(slices.Sorted(slices.Values(slices.Concat(ops.ListStatuses, ops.ListStates)))))
				property(in, "before")["pattern"] = `^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$`
			}}, rs.list),
		define(Tool{Name: "show", Title: "A run's calls, or one call", Payload: "timeline",
			Description: `A run's timeline, as crw flow show gives it: its calls in the order the workflow made them (role, ` +
				`node, status, reason, turns, tokens, times), a page at a time (offset, limit; next_offset for the next ` +
				`page), with the run's status, result or error, counts and tokens; or, with call, that one call with the ` +
				`prompt it sent and the answer it got (each past 1 MiB clipped: trace has them whole). A live run's too. ` +
				`Reads only.` + onError + onRun,
			input: func(in map[string]any) {
				limits(1, maxPage)(in)
				property(in, "offset")["minimum"] = 0
			}}, rs.show),
		define(Tool{Name: "logs", Title: "A run's log", Payload: "logs",
			Description: `A run's log, as crw flow logs prints it: its workflow's console and crw.log lines and the full ` +
				`account of its errors (the line whose correlationId an error's diagnostic names), oldest first, each as ` +
				`text and as the log keeps it. A page at a time: from offset (next_offset of the page before; more says ` +
				`whether lines are left), at most limit lines (default 200), or the last tail lines. Reads only.` + onError + onRun,
			input: func(in map[string]any) {
				limits(1, maxPage)(in)
				property(in, "offset")["minimum"] = 0
				p := property(in, "tail")
				p["minimum"], p["maximum"] = 1, maxPage
			}}, rs.logs),
		define(Tool{Name: "trace", Title: "A run's journal rows", Payload: "trace",
			Description: `A run's journal as trace rows (crw-trace/1), as crw flow trace exports it, a page at a time: the ` +
				`rows after the seq after (default 0: from the first), at most limit of them (default 100, at most 1000) ` +
				`and 4 MiB; next is the after of the next page (null when the journal has no more rows now: a live run's ` +
				`may gain more). A row past 1 MiB is clipped (crw flow trace has it whole). Reads only.` + onError + onRun,
			input: func(in map[string]any) {
				limits(1, maxPage)(in)
				property(in, "after")["minimum"] = 0
			}}, rs.trace),
		define(Tool{Name: "capabilities", Title: "The capability descriptor", Payload: "capabilities",
			Description: `The capability descriptor that capability_unavailable's safe_response points at: the backends of ` +
				`this build, for each the arguments of start it takes, its prerequisites and whether this host has them ` +
				`(ready, else missing: the first one it lacks and how to get it), what the host has that they look for ` +
				`(a codex binary, an owner thread in the server's environment), and the server's own facts (version, ` +
				`state folder, store, tools). Reads only.` + onError}, func(ctx context.Context, c *Call, in *CapabilitiesIn) (*Capabilities, error) {
			return capabilitiesOf(backends, facts, names()), nil
		}),
	}
}

func (rs *runs) list(ctx context.Context, c *Call, in *RunsIn) (*Page, error) {
	states, statuses, bad := ops.ListFilter(in.Status)
	if bad != "" {
		// The input schema lists the names: this is a name it takes that listing does not.
		return nil, errs.New(errs.InvalidRequest, "status %q: a status (%s) or a state (%s)", bad, strings.Join(ops.ListStatuses, ", "), strings.Join(ops.ListStates, ", "))
	}
	page, err := rs.svc.ListPage(ctx, engine.ListQuery{States: states, Statuses: statuses, Before: in.Before, Limit: intOr(in.Limit, 100)})
	if err != nil {
		return nil, err
	}
	out := &Page{Runs: []*Status{}}
	for i := len(page.Runs) - 1; i >= 0; i-- { // newest first
		out.Runs = append(out.Runs, statusOf(&page.Runs[i]))
	}
	if page.Next != "" {
		out.Next = &page.Next
	}
	return out, nil
}

func (rs *runs) show(ctx context.Context, c *Call, in *ShowIn) (*Shown, error) {
	if in.Call != "" {
		t, err := rs.svc.Timeline(ctx, in.Run, timeline.Options{Call: in.Call})
		if err != nil {
			return nil, err
		}
		if len(t.Calls) == 0 {
			return nil, errs.New(errs.InvalidRequest, "run %s has no call %q", in.Run, in.Call)
		}
		out := shownOf(t.Head, t.Tail, 1)
		out.Calls = append(out.Calls, callViewOf(&t.Calls[0], true))
		return out, nil
	}
	// The fold keeps no call's prompt or answer: a page of a long run costs its entries only.
	f, err := rs.svc.Fold(ctx, in.Run, timeline.Options{})
	if err != nil {
		return nil, err
	}
	offset, limit := intOr(in.Offset, 0), intOr(in.Limit, 100)
	out := shownOf(f.Head(), f.Tail(), f.Len())
	i := 0
	f.Each(func(call *timeline.Call) {
		if i >= offset && i < offset+limit {
			out.Calls = append(out.Calls, callViewOf(call, false))
		}
		i++
	})
	if next := offset + limit; next < f.Len() {
		out.NextOffset = &next
	}
	return out, nil
}

func shownOf(h timeline.Head, t timeline.Tail, total int) *Shown {
	out := &Shown{Run: h.Run, Workflow: h.Workflow, Backend: h.Backend, Status: string(h.Status), Started: timeText(h.Started),
		Result: rawOrNull(h.Result), Error: runErrorOf(h.Error), Counts: countsOf(t.Counts), Tokens: tokensOf(t.Tokens),
		Calls: []CallView{}, TotalCalls: total}
	if h.Ended != nil {
		e := timeText(*h.Ended)
		out.Ended = &e
	}
	return out
}

func callViewOf(c *timeline.Call, bodies bool) CallView {
	v := CallView{Call: c.Call, Index: c.Index, Role: c.Role, Node: c.Node, Status: string(c.Status), Reason: c.Reason,
		Detail: c.Detail, Site: c.Site, ThreadID: c.ThreadID, Model: c.Model, Effort: c.Effort, Turns: c.Turns,
		RepairUsed: c.RepairUsed, Tokens: tokensOf(c.Tokens), Started: timeText(c.Started), DurationMS: c.DurationMS,
		Attempts: c.Attempts, StartSeq: c.StartSeq, EndSeq: c.EndSeq, Handle: c.Handle, Continues: c.Continues,
		Output: json.RawMessage("null")}
	if c.Ended != nil {
		e := timeText(*c.Ended)
		v.Ended = &e
	}
	if bodies {
		v.Prompt, v.Repair = clip(c.Prompt, &v.Clipped), clip(c.Repair, &v.Clipped)
		if len(c.Output) > maxBody {
			v.Clipped = true
		} else {
			v.Output = rawOrNull(c.Output)
		}
	}
	return v
}

// clip is s cut to maxBody bytes at a rune boundary; clipped is set when it was cut.
func clip(s string, clipped *bool) string {
	if len(s) <= maxBody {
		return s
	}
	*clipped = true
	end := maxBody
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end]
}

func (rs *runs) logs(ctx context.Context, c *Call, in *LogsIn) (*Logs, error) {
	if in.Tail != nil && in.Offset != nil {
		return nil, errs.New(errs.InvalidRequest, "tail and offset: give one of them")
	}
	if _, err := rs.svc.Store.Spec(ctx, in.Run); err != nil {
		return nil, err
	}
	l := rs.svc.Store.Log(in.Run)
	size, err := l.Size()
	if err != nil {
		return nil, err
	}
	out := &Logs{Run: in.Run, Lines: []LogLine{}, Size: size}
	var offset int64
	limit := intOr(in.Limit, 200)
	if in.Offset != nil {
		offset = *in.Offset
	}
	if in.Tail != nil {
		// The last lines are in the last read's worth of the log: one byte before it tells
		// whether the window starts on a line of its own.
		limit = *in.Tail
		offset = max(0, size-store.MaxLogRead)
		if offset > 0 {
			offset--
		}
	}
	data, next, err := l.Read(offset, store.MaxLogRead)
	if err != nil {
		return nil, err
	}
	at := offset
	if in.Tail != nil && offset > 0 {
		// The window's first line is part of one before it.
		cut := bytes.IndexByte(data, '\n') + 1
		data, at = data[cut:], at+int64(cut)
	}
	var lines []LogLine
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		if text := strings.TrimRight(string(line), "\r"); text != "" {
			lines = append(lines, logLineOf(at, []byte(text)))
		}
		at += int64(len(line) + 1)
		data = rest
		if in.Tail == nil && len(lines) == limit {
			break
		}
	}
	if in.Tail != nil && len(lines) > limit {
		lines = lines[len(lines)-limit:]
	}
	out.Lines = append(out.Lines, lines...)
	out.NextOffset = min(at, next)
	if in.Tail != nil {
		out.NextOffset = next
	}
	out.More = out.NextOffset < size
	return out, nil
}

func logLineOf(at int64, raw []byte) LogLine {
	var text bytes.Buffer
	runlog.WriteLine(&text, raw, false)
	entry := json.RawMessage("null")
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		entry = json.RawMessage(raw)
	}
	return LogLine{Offset: at, Text: strings.TrimSuffix(text.String(), "\n"), Entry: entry}
}

// errPageFull stops the journal's reading once a trace page is full.
var errPageFull = errors.New("the page is full")

func (rs *runs) trace(ctx context.Context, c *Call, in *TraceIn) (*Trace, error) {
	if _, err := rs.svc.Store.Spec(ctx, in.Run); err != nil {
		return nil, err
	}
	var after uint64
	if in.After != nil {
		after = *in.After
	}
	limit := intOr(in.Limit, 100)
	out := &Trace{Run: in.Run, Format: journal.TraceFormat, Rows: []TraceRow{}}
	bytesIn, full := 0, false
	err := rs.svc.Store.Rows(ctx, in.Run, after+1, func(r *journal.Row) error {
		if len(out.Rows) == limit {
			full = true
			return errPageFull
		}
		data, err := json.Marshal(r)
		if err != nil {
			return err
		}
		row := TraceRow{Seq: r.Seq, Type: r.Type, Row: data}
		if len(data) > maxBody {
			row.Row, row.Clipped = json.RawMessage("null"), true
			data = nil
		}
		if len(out.Rows) > 0 && bytesIn+len(data) > maxTracePage {
			full = true
			return errPageFull
		}
		bytesIn += len(data)
		out.Rows = append(out.Rows, row)
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, err
	}
	if full {
		next := out.Rows[len(out.Rows)-1].Seq
		out.Next = &next
	}
	return out, nil
}

func capabilitiesOf(backends *backend.Registry, facts Facts, tools []string) *Capabilities {
	store := "the state folder"
	if facts.Store != "" {
		store = facts.Store
	}
	out := &Capabilities{Server: ServerFacts{Name: facts.Name, Version: facts.Version, State: facts.State, Store: store,
		Tools: tools, MaxArguments: wire.MaxArguments}, Backends: []BackendFacts{}, Host: hostFacts()}
	for _, name := range backends.Names() {
		d, _ := backends.Lookup(name)
		b := BackendFacts{Name: name, Summary: d.Summary, Options: []string{}, Prerequisites: append([]string{}, d.Prerequisites...)}
		for _, o := range d.Options {
			b.Options = append(b.Options, Args[backend.OptionField(o.Name)])
		}
		// What start checks of a run with none of the backend's options, and nothing of the
		// run: the host's part of its checks.
		if _, err := backends.Prepare(name, map[string]string{}); err != nil {
			e, ok := errs.As(Named(err))
			if !ok {
				e = errs.New(errs.CapabilityUnavailable, "backend %s: its checks failed", name)
			}
			f := &ToolFail{Code: string(e.Code), Detail: e.Detail}
			if e.Diagnostic != nil {
				f.NextAction = wire.OrNull(e.Diagnostic.NextAction)
			}
			b.Missing = f
		} else {
			b.Ready = true
		}
		out.Backends = append(out.Backends, b)
	}
	return out
}

// hostFacts are what the backends look for on this host.
func hostFacts() []Fact {
	var out []Fact
	if bin, err := codex.FindCodex(""); err == nil {
		out = append(out, Fact{Name: "codex", OK: true, Detail: "the codex binary: " + bin})
	} else {
		out = append(out, Fact{Name: "codex", Detail: "no codex binary: not on PATH, and $CRW_CODEX names none; install it with " + codex.InstallCommand})
	}
	if os.Getenv(session.OwnerEnv) != "" {
		out = append(out, Fact{Name: "owner_thread", OK: true, Detail: "$" + session.OwnerEnv + " is set in the server's environment: a session run's owner by default"})
	} else {
		out = append(out, Fact{Name: "owner_thread", Detail: "$" + session.OwnerEnv + " is not set in the server's environment: give a session run's owner"})
	}
	if h := os.Getenv(session.HostEnv); h != "" {
		out = append(out, Fact{Name: "session_host", OK: true, Detail: "$" + session.HostEnv + " names the owner's app server: " + h})
	} else {
		out = append(out, Fact{Name: "session_host", Detail: "$" + session.HostEnv + " is not set: a session run's host is its argument host, else a private app server"})
	}
	return out
}
