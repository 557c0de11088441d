package journal

import "encoding/json"

// Typed rows: what code writes is built through these, each naming the fields its row type
// carries, so a reader sees which of Row's fields a row of that type uses. Row stays the wire
// format; Row() is the row to append.

// Warning is something a person should know that moves no call: of a call, or of the run
// (Call "").
type Warning struct {
	Call, Reason, Detail string
	// DecisionID and Question: a warning of a decision.
	DecisionID, Question string
}

// Row is the warning row.
func (w Warning) Row() *Row {
	return &Row{Type: TypeWarning, Call: w.Call, Reason: w.Reason, Detail: w.Detail, DecisionID: w.DecisionID, Question: w.Question}
}

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
