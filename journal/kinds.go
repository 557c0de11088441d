package journal

import (
	"encoding/json"
	"time"
)

// Typed rows: what code writes is built through these, each naming the fields its row type
// carries, so a reader sees which of Row's fields a row of that type uses. Row stays the wire
// format; Row() is the row to append.

// Warning is something a person should know that moves no call: of a call, or of the run
// (Call "").
type Warning struct {
	Call, Reason, Detail string
	// DecisionID and Question: a warning of a decision. Of an answer (or a verdict) the run's
	// process refused: DecisionID is the answer's id, By its author and OutputDigest the
	// digest of its value, so whoever left it knows it for theirs.
	DecisionID, Question, By, OutputDigest string
}

// Row is the warning row.
func (w Warning) Row() *Row {
	return &Row{Type: TypeWarning, Call: w.Call, Reason: w.Reason, Detail: w.Detail, DecisionID: w.DecisionID, Question: w.Question, By: w.By, OutputDigest: w.OutputDigest}
}

// Reasons of the warning rows of an answer or a verdict the run's process refused.
const (
	ReasonAnswerRefused  = "answer_refused"
	ReasonVerdictRefused = "verdict_refused"
)

// End is how a call ended, by its terminal row's type (TypeHeld, TypeRefused, TypeSuperseded,
// TypeOutcomeUnknown, TypeNullModel), with the reason from the closed set and a detail. A
// completed call's end is Completed.
type End struct {
	Type, Reason, Detail string
}

// Row is the terminal row; the runner adds what the call's generation gathered (its turns,
// tokens, tree) before it appends it.
func (e End) Row() *Row { return &Row{Type: e.Type, Reason: e.Reason, Detail: e.Detail} }

// Held ends a call held for reason: a resume may run it again.
func Held(reason, detail string) *Row {
	return End{Type: TypeHeld, Reason: reason, Detail: detail}.Row()
}

// Refused ends a call refused for reason: nothing was sent, and a resume does not run it again.
func Refused(reason, detail string) *Row {
	return End{Type: TypeRefused, Reason: reason, Detail: detail}.Row()
}

// Completed is a completed call's answer: its output (the JSON the script gets), whether it was
// extracted from prose around it, and then the raw text it was extracted from.
type Completed struct {
	Output    json.RawMessage
	Extracted bool
	RawText   *string
}

// Row is the completed row.
func (c Completed) Row() *Row {
	return &Row{Type: TypeCompleted, Output: c.Output, Extracted: c.Extracted, RawText: c.RawText}
}

// DecisionRequested is a decision the script (or a tier step, Node) asks its owner.
type DecisionRequested struct {
	ID, Question, Node string
	Schema             json.RawMessage
}

// Row is the decision_requested row.
func (d DecisionRequested) Row() *Row {
	return &Row{Type: TypeDecisionRequested, DecisionID: d.ID, Question: d.Question, Node: d.Node, Schema: d.Schema}
}

// DecisionAnswered is the answer to a decision, as taken: its JSON and who gave it.
type DecisionAnswered struct {
	ID, By string
	Output json.RawMessage
}

// Row is the decision_answered row.
func (d DecisionAnswered) Row() *Row {
	return &Row{Type: TypeDecisionAnswered, DecisionID: d.ID, Output: d.Output, By: d.By}
}

// Reconciled is an operator's verdict (applied, not_applied) on Call, a call whose outcome was
// unknown; an applied verdict may carry the output seen, with its digest.
type Reconciled struct {
	Call, Verdict, By string
	Output            json.RawMessage
	OutputDigest      string
}

// Row is the effect_reconciled row.
func (r Reconciled) Row() *Row {
	return &Row{Type: TypeEffectReconciled, Effect: r.Call, Verdict: r.Verdict, By: r.By, Output: r.Output, OutputDigest: r.OutputDigest}
}

// Escalation is what the run's owner must act on (a usage or rate limit, an owner who does not
// answer): of a call, or of the run (Call "").
type Escalation struct {
	Call, Reason, Detail string
}

// Row is the escalation row.
func (e Escalation) Row() *Row {
	return &Row{Type: TypeEscalation, Call: e.Call, Reason: e.Reason, Detail: e.Detail}
}

// InterruptRequested is an interrupt of a call's turn, written before it is sent; a pull
// backend's turn is named by its step's op and attempt.
type InterruptRequested struct {
	Call, Reason, Op string
	Attempt          int
}

// Row is the interrupt_requested row.
func (i InterruptRequested) Row() *Row {
	return &Row{Type: TypeInterruptRequested, Call: i.Call, Reason: i.Reason, Op: i.Op, Attempt: i.Attempt}
}

// ThreadStarted is the thread a call's turns run on, with the pair it runs.
type ThreadStarted struct {
	Call, ThreadID, Model, Effort, Cwd, RolloutPath string
}

// Row is the thread_started row.
func (t ThreadStarted) Row() *Row {
	return &Row{Type: TypeThreadStarted, Call: t.Call, ThreadID: t.ThreadID, Model: t.Model, Effort: t.Effort, Cwd: t.Cwd, RolloutPath: t.RolloutPath}
}

// TurnStarted is turn K of a call (1 the task, 2 the repair) started on its thread; a repair
// names what was wrong and the answer it repairs.
type TurnStarted struct {
	Call, TurnID, Repair, PreviousAnswer string
	K                                    int
}

// Row is the turn_started row.
func (t TurnStarted) Row() *Row {
	return &Row{Type: TypeTurnStarted, Call: t.Call, K: t.K, TurnID: t.TurnID, Repair: t.Repair, PreviousAnswer: t.PreviousAnswer}
}

// CheckpointStarted is the conversation a continuation is given: the handle it continues, the
// calls of that conversation oldest first, and its digest.
type CheckpointStarted struct {
	Call, ChainedFrom, Digest string
	Calls                     []string
}

// Row is the checkpoint_started row.
func (c CheckpointStarted) Row() *Row {
	return &Row{Type: TypeCheckpointStarted, Call: c.Call, ChainedFrom: c.ChainedFrom, ConversationCalls: c.Calls, ConversationDigest: c.Digest}
}

// AttemptLost is a session attempt whose subagent will not finish its turn, with what the host
// showed of it.
type AttemptLost struct {
	Call, AgentID, TurnID, Reason, HostStatus, TurnStatus string
	K, Attempt                                            int
}

// Row is the session_attempt_lost row.
func (l AttemptLost) Row() *Row {
	return &Row{Type: TypeAttemptLost, Call: l.Call, K: l.K, Attempt: l.Attempt, AgentID: l.AgentID, TurnID: l.TurnID,
		Reason: l.Reason, HostStatus: l.HostStatus, TurnStatus: l.TurnStatus}
}

// CommitResult is a crw.commit's result: the commit made on the node's ref, or (Reason) why
// none was.
type CommitResult struct {
	Node, Ref, Commit, Tree, Parent, Reason, Detail string
}

// Row is the commit_result row.
func (c CommitResult) Row() *Row {
	return &Row{Type: TypeCommitResult, Node: c.Node, Ref: c.Ref, Commit: c.Commit, Tree: c.Tree, Parent: c.Parent, Reason: c.Reason, Detail: c.Detail}
}

// Prepared is a call's inputs as the script gave them and the role table decided: what a
// replay matches and a divergence names.
type Prepared struct {
	Role, Node, Prompt, SchemaDigest, Handle, Site string
	// RequestedPair is the pair the call asked for (nil: none); ConfiguredPair the pair its
	// role runs (nil: the role table has none).
	RequestedPair, ConfiguredPair *Pair
}

// Row is the prepared row; the runner gives it the call's id and issue index.
func (p Prepared) Row() *Row {
	return &Row{Type: TypePrepared, Role: p.Role, Node: p.Node, Prompt: p.Prompt, SchemaDigest: p.SchemaDigest,
		Handle: p.Handle, Site: p.Site, RequestedPair: p.RequestedPair, ConfiguredPair: p.ConfiguredPair}
}

// Started opens every process's rows: the run, its backend, its workflow and script digest, the
// role table and its digest, the process, and what the run was created with.
type Started struct {
	Run, Backend, Workflow, ScriptDigest, PolicyDigest, Process string
	RolePairs                                                   map[string]Pair
	Pool                                                        int
	BudgetTokens                                                int64
	Input                                                       json.RawMessage
	OmitCallSeqs                                                bool
}

// Row is the started row.
func (s Started) Row() *Row {
	return &Row{Type: TypeStarted, Run: s.Run, Backend: s.Backend, Workflow: s.Workflow, ScriptDigest: s.ScriptDigest,
		RolePairs: s.RolePairs, PolicyDigest: s.PolicyDigest, Process: s.Process, Pool: s.Pool, BudgetTokens: s.BudgetTokens,
		Input: s.Input, OmitCallSeqs: s.OmitCallSeqs}
}

// Ended is a process's last row when the run ended or waits: its status, and its result or
// error; a run waiting for verdicts names them (Awaited), a paused one what paused it.
type Ended struct {
	Status  string
	Result  json.RawMessage
	Error   *RunError
	Awaited []PendingDecision
	Paused  *Paused
}

// Row is the ended row.
func (e Ended) Row() *Row {
	row := &Row{Type: TypeEnded, Status: e.Status, Result: e.Result, Error: e.Error}
	if len(e.Awaited) > 0 || e.Paused != nil {
		row.Rare = &Rare{Awaited: e.Awaited, Paused: e.Paused}
	}
	return row
}

// Commit is a crw.commit's intent: the commit about to be made on a node's ref (the tree, the
// parent, the ref's value before, the worktree's HEAD, the message and identity), or refused
// (Status the error's code, Reason and Detail why) with no result to follow.
type Commit struct {
	Node, Ref, Tree, Parent, Old, Head, Message, Author, Email string
	Alloc                                                      int
	At                                                         time.Time
	Status, Reason, Detail                                     string
}

// Row is the commit_intent row.
func (c Commit) Row() *Row {
	return &Row{Type: TypeCommitIntent, Node: c.Node, Ref: c.Ref, Alloc: c.Alloc, Tree: c.Tree, Parent: c.Parent, Old: c.Old,
		Head: c.Head, Message: c.Message, Author: c.Author, Email: c.Email, At: c.At, Status: c.Status, Reason: c.Reason, Detail: c.Detail}
}

// WorkspacePlaced is how a call's directory P was made (Placement), in which node's allocation,
// at which commit (Start, Commit) and, for a checkout of pending work, holding which tree.
type WorkspacePlaced struct {
	Call, Placement, Node, Start, Commit, Tree, Workspace string
	Alloc                                                 int
}

// Row is the workspace_placed row.
func (w WorkspacePlaced) Row() *Row {
	return &Row{Type: TypeWorkspacePlaced, Call: w.Call, Placement: w.Placement, Node: w.Node, Alloc: w.Alloc,
		Start: w.Start, Commit: w.Commit, Tree: w.Tree, Workspace: w.Workspace}
}

// TierStep moves a node's executor calls up a tier on the evidence of a call that ended
// null_model: the tier reached, the role and pair it runs, the allocation it takes.
type TierStep struct {
	Node, Evidence, Role string
	Tier, Alloc          int
	ConfiguredPair       *Pair
}

// Row is the tier_step row.
func (t TierStep) Row() *Row {
	return &Row{Type: TypeTierStep, Node: t.Node, Evidence: t.Evidence, Tier: t.Tier, Role: t.Role, ConfiguredPair: t.ConfiguredPair, Alloc: t.Alloc}
}

// ResumeChanged is what a resume goes on with instead of what run.json names: another
// script (Workflow, with its digest), other backend options, a token budget from now on; By
// who asked.
type ResumeChanged struct {
	By, Workflow, ScriptDigest string
	BackendOptions             map[string]string
	Budget                     *int64
	// Files are the script's files by path, each by its digest in the store, when the run's
	// code is kept.
	Files map[string]string
}

// Row is the resume_changed row.
func (r ResumeChanged) Row() *Row {
	return &Row{Type: TypeResumeChanged, By: r.By, Workflow: r.Workflow, ScriptDigest: r.ScriptDigest,
		Rare: &Rare{BackendOptions: r.BackendOptions, Budget: r.Budget, Files: r.Files}}
}
