package tools

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/wire"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/session/nextview"
	"github.com/crw-dev/crw/engine/diagnosis"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// The tools' outputs. They carry what the command line's --json prints, shaped so that the
// inferred schema is strict: every member always there (null or empty when it has nothing), no
// maps (a run's calls by status are an object of every status; options a list of name and
// value), times as RFC 3339 text.

// Status is store.Status: where a run stands.
type Status struct {
	Run       string          `json:"run"`
	State     string          `json:"state" jsonschema:"running, paused, waiting_decision, waiting_resume, ended, crashed or queued"`
	Status    string          `json:"status" jsonschema:"how it ended (completed, failed, paused, waiting_decision, cancelled); empty until then"`
	Result    json.RawMessage `json:"result"`
	Error     *RunError       `json:"error"`
	Calls     Counts          `json:"calls"`
	InFlight  int             `json:"in_flight"`
	Tokens    Tokens          `json:"tokens"`
	Workflow  string          `json:"workflow"`
	Backend   string          `json:"backend"`
	Started   string          `json:"started"`
	Replaying bool            `json:"replaying"`
	PID       int             `json:"pid"`
	LastSeq   uint64          `json:"last_seq"`
	Updated   *string         `json:"updated"`
	Decisions []Decision      `json:"decisions" jsonschema:"the decisions the run waits for: answer each with the answer tool"`
}

// RunError is journal.RunError: a run's error.
type RunError struct {
	Code       string           `json:"code" jsonschema:"the stable error code (workflow_failed: the workflow threw an error of its own)"`
	Message    string           `json:"message" jsonschema:"the code's fixed message"`
	Detail     string           `json:"detail" jsonschema:"the error's own account: what the workflow threw, or what crw stopped it for (at most 1 KiB)"`
	Stack      string           `json:"stack" jsonschema:"the workflow's stack where it threw"`
	Reason     string           `json:"reason" jsonschema:"the finer cause, a lower_snake word"`
	Diagnostic *wire.Diagnostic `json:"diagnostic" jsonschema:"the bounded account, its next action and the log line with the full one"`
}

// Counts are a run's calls by status.
type Counts struct {
	Completed  int `json:"completed"`
	NullModel  int `json:"null_model"`
	Held       int `json:"held"`
	Refused    int `json:"refused"`
	Unknown    int `json:"unknown"`
	Superseded int `json:"superseded"`
}

// Tokens is journal.Tokens.
type Tokens struct {
	Input           int64 `json:"input"`
	CachedInput     int64 `json:"cached_input"`
	Output          int64 `json:"output"`
	ReasoningOutput int64 `json:"reasoning_output"`
	Total           int64 `json:"total"`
}

// Decision is a decision a run waits for.
type Decision struct {
	ID       string `json:"id"`
	Question string `json:"question"`
}

func statusOf(st *store.Status) *Status {
	out := &Status{Run: st.Run, State: string(st.State), Status: string(st.Status), Result: rawOrNull(st.Result),
		Error: runErrorOf(st.Error), Calls: countsOf(st.Calls), InFlight: st.InFlight, Tokens: tokensOf(st.Tokens),
		Workflow: st.Workflow, Backend: st.Backend, Started: timeText(st.Started), Replaying: st.Replaying, PID: st.PID,
		LastSeq: st.LastSeq, Decisions: []Decision{}}
	if !st.Updated.IsZero() {
		u := timeText(st.Updated)
		out.Updated = &u
	}
	for _, d := range st.Decisions {
		out.Decisions = append(out.Decisions, Decision{ID: d.ID, Question: d.Question})
	}
	return out
}

func runErrorOf(e *journal.RunError) *RunError {
	if e == nil {
		return nil
	}
	return &RunError{Code: e.Code, Message: e.Message, Detail: e.Detail, Stack: e.Stack, Reason: e.Reason, Diagnostic: wire.DiagnosticOf(e.Diagnostic)}
}

func countsOf(c store.Counts) Counts {
	return Counts{Completed: c[journal.StatusCompleted], NullModel: c[journal.StatusNullModel], Held: c[journal.StatusHeld],
		Refused: c[journal.StatusRefused], Unknown: c[journal.StatusUnknown], Superseded: c[journal.StatusSuperseded]}
}

func tokensOf(t journal.Tokens) Tokens {
	return Tokens{Input: t.Input, CachedInput: t.CachedInput, Output: t.Output, ReasoningOutput: t.ReasoningOutput, Total: t.Total}
}

// Started is a run started, or resumed, in a process of its own.
type Started struct {
	Run      string   `json:"run"`
	PID      int      `json:"pid"`
	State    string   `json:"state" jsonschema:"running: the process holds the run (or has already ended it)"`
	Warnings []string `json:"warnings" jsonschema:"what kept a session run's owner from being bound; the run goes on"`
	Preview  *Preview `json:"preview" jsonschema:"a session run's spawn formats and session facts"`
}

// Preview is ops.Preview.
type Preview struct {
	SpawnFormats []SpawnFormat `json:"spawn_formats"`
	Facts        []Fact        `json:"facts"`
	Next         string        `json:"next"`
}

// SpawnFormat is nextview.SpawnFormat.
type SpawnFormat struct {
	Role            string `json:"role"`
	AgentType       string `json:"agent_type"`
	Model           string `json:"model"`
	ReasoningEffort string `json:"reasoning_effort"`
	Call            string `json:"call"`
}

// Fact is ops.Fact.
type Fact struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

func startedOf(run string, pid int, warnings []string, p *ops.Preview) *Started {
	out := &Started{Run: run, PID: pid, State: string(store.StateRunning), Warnings: append([]string{}, warnings...)}
	if p != nil {
		out.Preview = &Preview{SpawnFormats: spawnFormatsOf(p.SpawnFormats), Facts: []Fact{}, Next: p.Next}
		for _, f := range p.Facts {
			out.Preview.Facts = append(out.Preview.Facts, Fact(f))
		}
	}
	return out
}

func spawnFormatsOf(fs []nextview.SpawnFormat) []SpawnFormat {
	out := []SpawnFormat{}
	for _, f := range fs {
		out = append(out, SpawnFormat(f))
	}
	return out
}

// Next is nextview.NextView: what a session run asks of its owner.
type Next struct {
	Run          string        `json:"run"`
	State        string        `json:"state" jsonschema:"running, waiting_session, paused, ended, starting or waiting_decision"`
	Status       string        `json:"status"`
	Steps        []Step        `json:"steps"`
	Slots        Slots         `json:"slots"`
	SpawnFormats []SpawnFormat `json:"spawn_formats"`
	Hint         string        `json:"hint"`
	ResumedPID   int           `json:"resumed_pid"`
	Warnings     []string      `json:"warnings"`
	Decisions    []Decision    `json:"decisions"`
}

// Step is nextview.NextStep: a step for the owner, the host call to make for it and what to do
// then.
type Step struct {
	Call            string   `json:"call"`
	K               int      `json:"k"`
	Attempt         int      `json:"attempt"`
	Op              string   `json:"op"`
	Marker          string   `json:"marker"`
	Role            string   `json:"role"`
	Action          string   `json:"action"`
	AgentType       string   `json:"agent_type"`
	Model           string   `json:"model"`
	ReasoningEffort string   `json:"reasoning_effort"`
	Message         string   `json:"message"`
	Packet          string   `json:"packet"`
	Workspace       string   `json:"workspace"`
	AgentID         string   `json:"agent_id"`
	HostCall        HostCall `json:"host_call"`
	Then            string   `json:"then"`
}

// HostCall is the call the owner makes on its host, with Codex's argument names.
type HostCall struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// Slots are the owner's subagent slots.
type Slots struct {
	Limit  int      `json:"limit"`
	Open   int      `json:"open"`
	Agents []string `json:"agents"`
}

func nextOf(v nextview.NextView) *Next {
	out := &Next{Run: v.Run, State: v.State, Status: v.Status, Steps: []Step{},
		Slots:        Slots{Limit: v.Slots.Limit, Open: v.Slots.Open, Agents: append([]string{}, v.Slots.Agents...)},
		SpawnFormats: spawnFormatsOf(v.SpawnFormats), Hint: v.Hint, ResumedPID: v.ResumedPID,
		Warnings: append([]string{}, v.Warnings...), Decisions: []Decision{}}
	for _, s := range v.Steps {
		args, _ := json.Marshal(s.HostCall.Arguments)
		out.Steps = append(out.Steps, Step{Call: s.Call, K: s.K, Attempt: s.Attempt, Op: s.Op, Marker: s.Marker, Role: s.Role,
			Action: s.Action, AgentType: s.AgentType, Model: s.Model, ReasoningEffort: s.ReasoningEffort, Message: s.Message,
			Packet: s.Packet, Workspace: s.Workspace, AgentID: s.AgentID, HostCall: HostCall{Tool: s.HostCall.Tool, Arguments: args},
			Then: s.Then})
	}
	for _, d := range v.Decisions {
		out.Decisions = append(out.Decisions, Decision{ID: d.ID, Question: d.Question})
	}
	return out
}

// Reply is bus.Reply: the run's reply to a dispatched report.
type Reply struct {
	Reply  string `json:"reply" jsonschema:"bound, pair_mismatch, retry, refused, close or queued"`
	Marker string `json:"marker"`
	Agent  string `json:"agent"`
	Detail string `json:"detail"`
	Model  string `json:"model"`
	Effort string `json:"effort"`
}

// Answered is engine.Answered.
type Answered struct {
	Run       string `json:"run"`
	Decision  string `json:"decision"`
	Journaled bool   `json:"journaled" jsonschema:"the answer is in the run's journal; else the run's live process takes it when it can"`
	PID       int    `json:"pid" jsonschema:"the process a resume started (0: none)"`
}

// Inspection is diagnosis.Inspection: a run's diagnosis.
type Inspection struct {
	Status   *Status    `json:"status"`
	Held     []HeldNode `json:"held"`
	InFlight []string   `json:"in_flight"`
	Effects  []Effect   `json:"effects"`
	Verdicts []Verdict  `json:"verdicts" jsonschema:"the operators' verdicts on unknown outcomes, in journal order"`
	Log      string     `json:"log"`
	Next     []string   `json:"next" jsonschema:"the commands that move the run on, most pressing first"`
	Backend  Backend    `json:"backend"`
}

// Verdict is diagnosis.GivenVerdict: a verdict in the run's journal.
type Verdict struct {
	Seq          uint64          `json:"seq" jsonschema:"the journal row the verdict is (crw flow show RUN --json has it whole)"`
	Call         string          `json:"call"`
	Verdict      string          `json:"verdict"`
	By           string          `json:"by"`
	At           string          `json:"at"`
	Output       json.RawMessage `json:"output" jsonschema:"an applied verdict's output (null when none, or clipped)"`
	OutputDigest string          `json:"output_digest"`
	Clipped      bool            `json:"clipped" jsonschema:"the output was too long to list (crw flow show has it)"`
}

// HeldNode is a node in recovery hold and the call that holds it.
type HeldNode struct {
	Node string `json:"node"`
	Call string `json:"call"`
}

// Backend is what an inspection says of the run's backend.
type Backend struct {
	Name      string   `json:"name"`
	Options   []Option `json:"options"`
	HostLog   string   `json:"host_log"`
	Host      string   `json:"host"`
	Reachable string   `json:"reachable"`
}

// Option is one backend option a run records.
type Option struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Effect is diagnosis.Effect: an effect whose outcome is unknown.
type Effect struct {
	Run    string   `json:"run"`
	Call   string   `json:"call"`
	Kind   string   `json:"kind" jsonschema:"call (a turn's answer was lost) or commit (its result was not recorded)"`
	Node   string   `json:"node"`
	Role   string   `json:"role"`
	Reason string   `json:"reason"`
	Thread string   `json:"thread"`
	Turns  []string `json:"turns"`
	Ref    string   `json:"ref"`
	Verify string   `json:"verify" jsonschema:"what to verify, and where"`
	Then   string   `json:"then" jsonschema:"the command that reconciles it"`
}

func inspectionOf(in *diagnosis.Inspection) *Inspection {
	out := &Inspection{Status: statusOf(in.Status), Held: []HeldNode{}, InFlight: append([]string{}, in.InFlight...),
		Effects: effectsOf(in.Effects), Log: in.Log, Next: append([]string{}, in.Next...),
		Backend: Backend{Name: in.Backend.Name, Options: []Option{}, HostLog: in.Backend.HostLog, Host: in.Backend.Host, Reachable: in.Backend.Reachable}}
	for _, h := range in.Held {
		out.Held = append(out.Held, HeldNode(h))
	}
	out.Verdicts = []Verdict{}
	for _, v := range in.Verdicts {
		out.Verdicts = append(out.Verdicts, Verdict{Seq: v.Seq, Call: v.Call, Verdict: v.Verdict, By: v.By, At: timeText(v.At),
			Output: rawOrNull(v.Output), OutputDigest: v.OutputDigest, Clipped: v.Clipped})
	}
	names := make([]string, 0, len(in.Backend.Options))
	for k := range in.Backend.Options {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		out.Backend.Options = append(out.Backend.Options, Option{Name: k, Value: in.Backend.Options[k]})
	}
	return out
}

func effectsOf(es []diagnosis.Effect) []Effect {
	out := []Effect{}
	for _, e := range es {
		out = append(out, Effect{Run: e.Run, Call: e.Call, Kind: e.Kind, Node: e.Node, Role: e.Role, Reason: e.Reason,
			Thread: e.Thread, Turns: append([]string{}, e.Turns...), Ref: e.Ref, Verify: e.Verify, Then: e.Then})
	}
	return out
}

// AuditEntry is engine.AuditEntry: one mutation and how it ended.
type AuditEntry struct {
	At     string `json:"at"`
	Op     string `json:"op"`
	Run    string `json:"run"`
	Who    string `json:"who"`
	Result string `json:"result" jsonschema:"ok, or the error's code"`
	Detail string `json:"detail"`
}

func auditOf(es []engine.AuditEntry) []AuditEntry {
	out := []AuditEntry{}
	for _, e := range es {
		out = append(out, AuditEntry{At: timeText(e.At), Op: e.Op, Run: e.Run, Who: e.Who, Result: e.Result, Detail: e.Detail})
	}
	return out
}

// Reconciled is engine.Reconciled: what a verdict did.
type Reconciled struct {
	Run       string   `json:"run"`
	Call      string   `json:"call"`
	Verdict   string   `json:"verdict"`
	Node      string   `json:"node"`
	HeldBy    []string `json:"held_by" jsonschema:"the node's other unknown calls, which hold it until they have verdicts too"`
	Journaled bool     `json:"journaled" jsonschema:"the verdict is in the run's journal; else the run's live process takes it"`
	PID       int      `json:"pid" jsonschema:"the process a resume started for a workflow that waited for the verdict (0: none)"`
}

// Report is shadow.Report: what a shadow replay found.
type Report struct {
	Run         string          `json:"run"`
	Backend     string          `json:"backend"`
	Script      string          `json:"script"`
	Recorded    int             `json:"recorded"`
	Matched     int             `json:"matched"`
	Divergences []Divergence    `json:"divergences"`
	Unmade      []ShadowCall    `json:"unmade" jsonschema:"recorded calls the script never made"`
	New         []ShadowCall    `json:"new" jsonschema:"calls the recorded run does not have (held in the shadow)"`
	Status      string          `json:"status" jsonschema:"the script's end: completed or failed"`
	Result      json.RawMessage `json:"result"`
	Error       *RunError       `json:"error"`
	Differs     bool            `json:"differs" jsonschema:"the script made anything but exactly the recorded calls"`
}

// Divergence is a call whose inputs differ from the recorded call it was aligned with.
type Divergence struct {
	Position int         `json:"position"`
	Call     string      `json:"call"`
	Node     string      `json:"node"`
	Fields   []FieldDiff `json:"fields"`
	Diff     string      `json:"diff"`
}

// FieldDiff is an input that differs.
type FieldDiff struct {
	Field    string `json:"field"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
}

// ShadowCall names a call in a report.
type ShadowCall struct {
	Position int    `json:"position"`
	Call     string `json:"call"`
	Role     string `json:"role"`
	Node     string `json:"node"`
	Prompt   string `json:"prompt"`
	Site     string `json:"site"`
}

func reportOf(r *shadow.Report) *Report {
	out := &Report{Run: r.Run, Backend: r.Backend, Script: r.Script, Recorded: r.Recorded, Matched: r.Matched,
		Divergences: []Divergence{}, Unmade: shadowCalls(r.Unmade), New: shadowCalls(r.New), Status: string(r.Status),
		Result: rawOrNull(r.Result), Error: runErrorOf(r.Error), Differs: r.Differs()}
	for _, d := range r.Divergences {
		dv := Divergence{Position: d.Position, Call: d.Call, Node: d.Node, Fields: []FieldDiff{}, Diff: d.Diff}
		for _, f := range d.Fields {
			dv.Fields = append(dv.Fields, FieldDiff(f))
		}
		out.Divergences = append(out.Divergences, dv)
	}
	return out
}

func shadowCalls(cs []shadow.Call) []ShadowCall {
	out := []ShadowCall{}
	for _, c := range cs {
		out = append(out, ShadowCall(c))
	}
	return out
}

func rawOrNull(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage("null")
	}
	return r
}

func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Page is a page of runs, as crw flow list --json prints it: newest first.
type Page struct {
	Runs []*Status `json:"runs" jsonschema:"the runs, newest first"`
	Next *string   `json:"next" jsonschema:"the run to give before for the page of older runs; null when none is left"`
}

// Shown is a run's timeline (timeline.Timeline), a page of its calls at a time.
type Shown struct {
	Run        string          `json:"run"`
	Workflow   string          `json:"workflow"`
	Backend    string          `json:"backend"`
	Status     string          `json:"status" jsonschema:"how it ended (completed, failed, paused, waiting_decision, cancelled); empty until then"`
	Started    string          `json:"started"`
	Ended      *string         `json:"ended"`
	Result     json.RawMessage `json:"result"`
	Error      *RunError       `json:"error"`
	Counts     Counts          `json:"counts" jsonschema:"the run's calls by status (the one call's, with call)"`
	Tokens     Tokens          `json:"tokens"`
	Calls      []CallView      `json:"calls" jsonschema:"the page's calls in the order the workflow made them; with call, that one, its prompt and answer too"`
	TotalCalls int             `json:"total_calls" jsonschema:"how many calls the run has"`
	NextOffset *int            `json:"next_offset" jsonschema:"the offset of the next page of calls; null when none is left"`
}

// CallView is timeline.Call: one call as the journal tells it, its newest generation.
type CallView struct {
	Call       string          `json:"call"`
	Index      int             `json:"index"`
	Role       string          `json:"role"`
	Node       string          `json:"node"`
	Status     string          `json:"status" jsonschema:"completed, null_model, held, refused, unknown or superseded; empty while it has no outcome"`
	Reason     string          `json:"reason"`
	Detail     string          `json:"detail"`
	Site       string          `json:"site" jsonschema:"where the workflow made it: file:line:col"`
	ThreadID   string          `json:"thread_id"`
	Model      string          `json:"model"`
	Effort     string          `json:"effort"`
	Turns      int             `json:"turns"`
	RepairUsed bool            `json:"repair_used"`
	Repair     string          `json:"repair" jsonschema:"what its repair turn named as wrong"`
	Tokens     Tokens          `json:"tokens"`
	Started    string          `json:"started"`
	Ended      *string         `json:"ended"`
	DurationMS int64           `json:"duration_ms"`
	Attempts   int             `json:"attempts" jsonschema:"its generations: more than 1 when a resume took it up again (trace has every one's rows)"`
	StartSeq   uint64          `json:"start_seq"`
	EndSeq     uint64          `json:"end_seq"`
	Handle     string          `json:"handle"`
	Continues  string          `json:"continues" jsonschema:"the handle of the call it continues"`
	Prompt     string          `json:"prompt" jsonschema:"with call: the prompt it sent (clipped past 1 MiB)"`
	Output     json.RawMessage `json:"output" jsonschema:"with call: its answer (null when none, or past 1 MiB)"`
	Clipped    bool            `json:"clipped" jsonschema:"the prompt or the answer was past 1 MiB: trace has them whole"`
}

// Logs is a page of a run's log (crw flow logs): its workflow's lines and its errors' accounts.
type Logs struct {
	Run        string    `json:"run"`
	Lines      []LogLine `json:"lines"`
	NextOffset int64     `json:"next_offset" jsonschema:"the offset after the page's last line: give it as offset to read on"`
	Size       int64     `json:"size" jsonschema:"the log's size in bytes now"`
	More       bool      `json:"more" jsonschema:"the log has lines past the page now"`
}

// LogLine is one line of a run's log.
type LogLine struct {
	Offset int64           `json:"offset" jsonschema:"where the line starts in the log"`
	Text   string          `json:"text" jsonschema:"the line as crw flow logs prints it"`
	Entry  json.RawMessage `json:"entry" jsonschema:"the line as the log keeps it (crw flow logs --json), null for one that is not a JSON object"`
}

// Trace is a page of a run's journal as trace rows (crw flow trace, crw-trace/1).
type Trace struct {
	Run    string     `json:"run"`
	Format string     `json:"format" jsonschema:"the trace format the rows are in: crw-trace/1"`
	Rows   []TraceRow `json:"rows"`
	Next   *uint64    `json:"next" jsonschema:"the seq to give after for the next page; null when the journal has no more rows now"`
}

// TraceRow is one journal row.
type TraceRow struct {
	Seq     uint64          `json:"seq"`
	Type    string          `json:"type"`
	Row     json.RawMessage `json:"row" jsonschema:"the row as a trace line holds it; null when clipped"`
	Clipped bool            `json:"clipped" jsonschema:"the row is past 1 MiB: crw flow trace has it whole"`
}

// Capabilities is the capability descriptor: the backends of this build, what each needs of
// the host and what this host lacks, and the server's own facts.
type Capabilities struct {
	Server   ServerFacts    `json:"server"`
	Backends []BackendFacts `json:"backends"`
	Host     []Fact         `json:"host" jsonschema:"what this host has that the backends look for"`
}

// ServerFacts are the server's own facts.
type ServerFacts struct {
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	State        string   `json:"state" jsonschema:"the state folder"`
	Store        string   `json:"store" jsonschema:"where the runs live: the state folder, or an etcd cluster"`
	Tools        []string `json:"tools"`
	MaxArguments int      `json:"max_arguments" jsonschema:"the largest arguments a call may have, in bytes"`
}

// BackendFacts is one backend of the build: what it needs, and whether this host has it.
type BackendFacts struct {
	Name          string    `json:"name"`
	Summary       string    `json:"summary"`
	Options       []string  `json:"options" jsonschema:"the arguments of start it takes"`
	Prerequisites []string  `json:"prerequisites" jsonschema:"what a run of it needs of the host"`
	Ready         bool      `json:"ready" jsonschema:"a start with none of its options would pass its checks on this host"`
	Missing       *ToolFail `json:"missing" jsonschema:"what a start with none of its options is refused for here: the first prerequisite missing"`
}

// ToolFail is an error as a tool would answer it, without its diagnostic's bookkeeping.
type ToolFail struct {
	Code       string  `json:"code"`
	Detail     string  `json:"detail"`
	NextAction *string `json:"next_action"`
}
