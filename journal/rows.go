// Package journal is a run's record: the row (the wire format of every row type, one struct
// whose members each row type uses a part of), the typed rows code builds them through, their
// codec and checksum, export and import as JSON Lines, and the summary a writer keeps beside
// the rows (Summary, Outstanding).
//
// It is over 1,500 lines because it is the one vocabulary every other package reads and
// writes: each row type's members, its constructor and the summary's fold of it sit together,
// so a row type is changed in one place.
package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"regexp"
	"time"

	"github.com/crw-dev/crw/errs"
)

// Row types. The words are the ones DESIGN.md uses; a trace carries them as they are.
const (
	// Run rows.
	TypeStarted     = "started"
	TypeEnded       = "ended"
	TypeEscalation  = "escalation"
	TypeWarning     = "warning"
	TypeSessionWake = "session_wake" // a wake of a session run's owner thread
	// TypeSessionWakeEnded: the turn a wake started on the owner's thread ended (its status).
	TypeSessionWakeEnded = "session_wake_ended"
	// TypeSessionHostWarning: what the marker search after a restart could not tie as it should.
	TypeSessionHostWarning = "session_host_warning"
	// TypeStepUnwritten: a session step that could not be written (its packet or step file),
	// at its 1st, 10th, 100th, ... failure, and a closing row once it is written or its turn ends.
	TypeStepUnwritten = "step_unwritten"
	// Workspace rows (docs/workspaces.md): a crw.commit's intent and its result, a node's step
	// up a tier, a decision the workflow asks for and its answer.
	TypeCommitIntent      = "commit_intent"
	TypeCommitResult      = "commit_result"
	TypeTierStep          = "tier_step"
	TypeDecisionRequested = "decision_requested"
	TypeDecisionAnswered  = "decision_answered"
	// TypeEffectReconciled: an operator's verdict on a call that ended unknown (crw flow
	// recover): applied or not_applied. The call's own rows stay as they are.
	TypeEffectReconciled = "effect_reconciled"
	// TypeResumeChanged: a resume goes on with an edited script or other backend options (crw
	// flow resume RUN --script F, --answers F); run.json stays as the run was created.
	TypeResumeChanged = "resume_changed"

	// Call rows: intents first, then exactly one terminal row.
	TypePrepared           = "prepared"
	TypeThreadStarted      = "thread_started"
	TypeTurnStarted        = "turn_started"
	TypeStepPublished      = "step_published" // a pull backend's turn, handed over as a step
	TypeInterruptRequested = "interrupt_requested"
	TypeAttemptLost        = "session_attempt_lost" // a session attempt whose subagent will not finish its turn
	TypeCheckpointStarted  = "checkpoint_started"   // a continuation started from the journal's record of its conversation
	TypeWorkspacePlaced    = "workspace_placed"     // the directory P the placer made for the call

	TypeCompleted      = "completed"
	TypeNullModel      = "null_model"
	TypeHeld           = "held"
	TypeRefused        = "refused"
	TypeOutcomeUnknown = "outcome_unknown"
	TypeSuperseded     = "superseded"
)

// CallStatus is a call's status as the script sees it: its terminal row's type, except that
// outcome_unknown reads unknown.
type CallStatus string

// Call statuses.
const (
	StatusCompleted  CallStatus = "completed"
	StatusNullModel  CallStatus = "null_model"
	StatusHeld       CallStatus = "held"
	StatusRefused    CallStatus = "refused"
	StatusUnknown    CallStatus = "unknown"
	StatusSuperseded CallStatus = "superseded"
)

// Statuses lists the call statuses in the order a summary names them.
var Statuses = []CallStatus{StatusCompleted, StatusNullModel, StatusHeld, StatusRefused, StatusUnknown, StatusSuperseded}

// StatusOf is the status a terminal row of type t gives its call.
func StatusOf(t string) CallStatus {
	if t == TypeOutcomeUnknown {
		return StatusUnknown
	}
	return CallStatus(t)
}

// IsKnownType reports whether t is one of the row types above.
func IsKnownType(t string) bool {
	switch t {
	case TypeStarted, TypeEnded, TypeEscalation, TypeWarning, TypeSessionWake, TypeSessionWakeEnded, TypeSessionHostWarning, TypeStepUnwritten,
		TypeCommitIntent, TypeCommitResult, TypeTierStep, TypeDecisionRequested, TypeDecisionAnswered, TypeEffectReconciled,
		TypePrepared, TypeThreadStarted, TypeTurnStarted, TypeStepPublished, TypeInterruptRequested, TypeAttemptLost, TypeCheckpointStarted,
		TypeWorkspacePlaced, TypeResumeChanged:
		return true
	}
	return IsTerminal(t)
}

// IsTerminal reports whether a row of type t ends its call.
func IsTerminal(t string) bool {
	switch t {
	case TypeCompleted, TypeNullModel, TypeHeld, TypeRefused, TypeOutcomeUnknown, TypeSuperseded:
		return true
	}
	return false
}

// Pair is a (model, effort) pair; an empty part is undecided.
type Pair struct {
	Model  string `json:"model,omitempty"`
	Effort string `json:"effort,omitempty"`
}

// Tokens counts a turn's or a call's tokens; a part that is 0 is left out of the row.
type Tokens struct {
	Input           int64 `json:"input,omitempty"`
	CachedInput     int64 `json:"cached_input,omitempty"`
	Output          int64 `json:"output,omitempty"`
	ReasoningOutput int64 `json:"reasoning_output,omitempty"`
	Total           int64 `json:"total,omitempty"`
}

// MaxTokens bounds one count of a turn's usage: far beyond any model's, and small enough that
// sums of them cannot overflow. A host's count outside 0..MaxTokens is clamped (Bounded).
const MaxTokens int64 = 1_000_000_000_000

// Bounded returns t with every part clamped to 0..MaxTokens: a host that reports a negative
// or absurd count must not bring a run's spending down or wrap it around.
func (t Tokens) Bounded() Tokens {
	c := func(x int64) int64 { return min(max(x, 0), MaxTokens) }
	return Tokens{Input: c(t.Input), CachedInput: c(t.CachedInput), Output: c(t.Output),
		ReasoningOutput: c(t.ReasoningOutput), Total: c(t.Total)}
}

// Add returns the part-wise sum of t and u, saturating at the int64 maximum.
func (t Tokens) Add(u Tokens) Tokens {
	sat := func(a, b int64) int64 {
		if b > 0 && a > math.MaxInt64-b {
			return math.MaxInt64
		}
		return a + b
	}
	return Tokens{
		Input:           sat(t.Input, u.Input),
		CachedInput:     sat(t.CachedInput, u.CachedInput),
		Output:          sat(t.Output, u.Output),
		ReasoningOutput: sat(t.ReasoningOutput, u.ReasoningOutput),
		Total:           sat(t.Total, u.Total),
	}
}

// IsZero reports whether no part is counted.
func (t Tokens) IsZero() bool { return t == Tokens{} }

// Rare are the members few rows carry, kept out of every Row's size (a run buffers thousands).
type Rare struct {
	// resume_changed: what a resume goes on with instead of what run.json names (Workflow, an
	// edited script; BackendOptions, e.g. another answers file; Budget, the token budget from
	// now on, 0: none), and By who asked.
	BackendOptions map[string]string `json:"backend_options,omitempty"`
	Budget         *int64            `json:"budget,omitempty"`
	// Files: the edited script's files by path, each by the digest its store keeps it under,
	// for a run whose code is kept (store.Spec.CodeKept).
	Files map[string]string `json:"files,omitempty"`
	// ended (waiting_decision): the verdicts the workflow waits for (crw.effect), which no
	// decision_requested row names.
	Awaited []PendingDecision `json:"awaited,omitempty"`
	// ended (paused): what paused the run, and so what a resume needs to go on.
	Paused *Paused `json:"paused,omitempty"`
	// step_unwritten: how writing the step fails, and on the closing row whether it was written.
	Unwritten *Unwritten `json:"unwritten,omitempty"`
}

// Unwritten is what a step_unwritten row records of a step that could not be written: it was
// delivered to nobody (InputState not_delivered). Written is set on the closing row only: true
// once the step was written, false when its turn ended unwritten.
type Unwritten struct {
	InputState string    `json:"input_state"`
	Error      string    `json:"error,omitempty"`
	Failures   int       `json:"failures"`
	FirstAt    time.Time `json:"first_at"`
	LastAt     time.Time `json:"last_at"`
	Written    *bool     `json:"written,omitempty"`
}

// Paused is what paused a run, as the ended row of its process records it.
type Paused struct {
	// Limit: a usage or rate limit held calls (its escalation row); a resume goes on once the
	// limit has passed.
	Limit bool `json:"limit,omitempty"`
	// Budget is the run's token budget that held calls (budget_exhausted), and Spent the
	// tokens the run had spent then: a resume goes on with a budget above Spent
	// (crw flow resume --budget-tokens N), or none (0).
	Budget int64 `json:"budget,omitempty"`
	Spent  int64 `json:"spent,omitempty"`
	// HostBudget: the host's session budget held calls (budget_exhausted); a resume goes on
	// once the host has raised it.
	HostBudget bool `json:"host_budget,omitempty"`
}

// Rares are r's rare members: the zero Rare when it has none.
func (r *Row) Rares() Rare {
	if r.Rare == nil {
		return Rare{}
	}
	return *r.Rare
}

// Row is one journal row. Every row carries seq, type and at, and call where it belongs to a call;
// the other members are set only by the row types named beside them.
type Row struct {
	Seq  uint64    `json:"seq"`
	Type string    `json:"type"`
	At   time.Time `json:"at"`
	Call string    `json:"call,omitempty"`

	// started
	Run          string          `json:"run,omitempty"`
	Backend      string          `json:"backend,omitempty"`
	Workflow     string          `json:"workflow,omitempty"`
	ScriptDigest string          `json:"script_digest,omitempty"`
	RolePairs    map[string]Pair `json:"role_pairs,omitempty"`
	PolicyDigest string          `json:"policy_digest,omitempty"`
	Process      string          `json:"process,omitempty"`
	Pool         int             `json:"pool,omitempty"`
	BudgetTokens int64           `json:"budget_tokens,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	// OmitCallSeqs: the run's CallResults have no meta.startSeq and meta.endSeq (a run
	// created by crw flow run).
	OmitCallSeqs bool `json:"omit_call_seqs,omitempty"`
	// resume_changed and ended rows: what only those carry, one pointer on every other row.
	*Rare

	// prepared: the call's inputs, kept whole enough to name what changed on a divergence.
	Index          int    `json:"index,omitempty"` // 1-based issue order
	Role           string `json:"role,omitempty"`
	Node           string `json:"node,omitempty"`
	Prompt         string `json:"prompt,omitempty"`
	PromptDigest   string `json:"prompt_digest,omitempty"`
	SchemaDigest   string `json:"schema_digest,omitempty"`
	RequestedPair  *Pair  `json:"requested_pair,omitempty"`
	ConfiguredPair *Pair  `json:"configured_pair,omitempty"`
	Handle         string `json:"handle,omitempty"` // the handle a continuation resumes
	InputDigest    string `json:"input_digest,omitempty"`
	Site           string `json:"site,omitempty"` // file:line of the agent.call

	// thread_started
	ThreadID    string `json:"thread_id,omitempty"`
	Model       string `json:"model,omitempty"`
	Effort      string `json:"effort,omitempty"`
	ChainedFrom string `json:"chained_from,omitempty"` // the handle whose conversation this thread carries
	ChainThread string `json:"chain_thread,omitempty"` // that handle's thread

	// checkpoint_started (and chained_from): the calls of the conversation a continuation is
	// given, oldest first, and the digest of that conversation.
	ConversationCalls  []string `json:"conversation_calls,omitempty"`
	ConversationDigest string   `json:"conversation_digest,omitempty"`
	Cwd                string   `json:"cwd,omitempty"`
	RolloutPath        string   `json:"rollout_path,omitempty"`

	// turn_started, step_published
	K      int    `json:"k,omitempty"`      // 1 for the task turn, 2 for the repair
	Marker string `json:"marker,omitempty"` // the step a pull backend published the turn as
	TurnID string `json:"turn_id,omitempty"`
	Repair string `json:"repair,omitempty"` // what the repair turn names as wrong

	// A session call's step_published, thread_started and turn_started (docs/session-backend.md).
	// The step's input is in Input (a JSON string) and its digest in InputDigest.
	Op               string  `json:"op,omitempty"`      // <call>/t<k>
	Attempt          int     `json:"attempt,omitempty"` // the session attempt the step or bind belongs to
	Action           string  `json:"action,omitempty"`  // spawn or send_input
	Packet           string  `json:"packet,omitempty"`  // the packet file, under the run's folder
	PacketDigest     string  `json:"packet_digest,omitempty"`
	AgentType        string  `json:"agent_type,omitempty"`
	Workspace        string  `json:"workspace,omitempty"` // the directory P the subagent works in
	AgentID          string  `json:"agent_id,omitempty"`  // the subagent a send_input goes to
	Note             string  `json:"note,omitempty"`      // what the packet says of earlier attempts
	PreviousAnswer   string  `json:"previous_answer,omitempty"`
	TokensSeen       *Tokens `json:"tokens_seen,omitempty"`
	CallTokens       *Tokens `json:"call_tokens,omitempty"`
	ConversationTurn int     `json:"conversation_turn,omitempty"`
	ReplacesTurn     int     `json:"replaces_turn,omitempty"`
	Via              string  `json:"via,omitempty"` // session: the thread is a subagent of the owner
	HostCwd          string  `json:"host_cwd,omitempty"`
	ParentThreadID   string  `json:"parent_thread_id,omitempty"`
	AgentRole        string  `json:"agent_role,omitempty"`
	// thread_started of a session subagent: which decided parts of the role's pair were not
	// checked (pair_unchecked, effort_unchecked, model_unchecked; "" both were), and the
	// pairs earlier attempts of the call (or the handle's subagent) ran when they differ.
	PairCheck  string `json:"pair_check,omitempty"`
	PriorPairs []Pair `json:"prior_pairs,omitempty"`
	HostStatus string `json:"host_status,omitempty"` // session_attempt_lost: the thread's status on the host
	TurnStatus string `json:"turn_status,omitempty"` // and its marker turn's

	// session_wake, and escalation session_unresponsive: the steps waiting for the owner (their
	// markers, ops), the wake's logical id, how many wakes of those steps came before it, the
	// owner's status on the host, how long the steps have waited, and whether a message was
	// staged (reason and detail say why not).
	Batch          string   `json:"batch,omitempty"`
	WakeID         string   `json:"wake_id,omitempty"`
	Renotify       int      `json:"renotify,omitempty"`
	Ops            []string `json:"ops,omitempty"`
	Owner          string   `json:"owner,omitempty"`
	OwnerStatus    string   `json:"owner_status,omitempty"`
	WaitingSeconds int64    `json:"waiting_seconds,omitempty"`
	Staged         *bool    `json:"staged,omitempty"`
	// session_host_warning: no_ledger_line, ledger_op_differs, several_spawns, window_ended.
	Warnings []string `json:"warnings,omitempty"`

	// workspace_placed: how P was made (attempt, checkout, scratch or cwd), the node's
	// allocation it belongs to, the commit it started at (Start) and, for a checkout of a node's
	// pending work, the tree it holds. commit_intent and commit_result: the node's ref, the
	// tree committed, the parent, the ref's value before (Old: "" none) and the worktree's HEAD
	// as observed (Head), the message and identity, and the commit made. A terminal row of an
	// executor call: the tree its worktree held when it ended, and the commits it made itself.
	Placement string     `json:"placement,omitempty"`
	Alloc     int        `json:"alloc,omitempty"`
	Start     string     `json:"start,omitempty"`
	Tree      string     `json:"tree,omitempty"`
	Commit    string     `json:"commit,omitempty"`
	Parent    string     `json:"parent,omitempty"`
	Ref       string     `json:"ref,omitempty"`
	Old       string     `json:"old,omitempty"`
	Head      string     `json:"head,omitempty"`
	Message   string     `json:"message,omitempty"`
	Author    string     `json:"author,omitempty"`
	Email     string     `json:"email,omitempty"`
	HeadMoved *HeadMoved `json:"executor_head_moved,omitempty"`
	// tier_step: the call whose null_model is its evidence, the tier reached (1: executor-t1)
	// and the pair that tier runs; decision_requested and decision_answered: the decision's id,
	// question and schema, the answer (Output) and who gave it.
	Evidence   string          `json:"evidence,omitempty"`
	Tier       int             `json:"tier,omitempty"`
	DecisionID string          `json:"decision_id,omitempty"`
	Question   string          `json:"question,omitempty"`
	Schema     json.RawMessage `json:"schema,omitempty"`
	By         string          `json:"by,omitempty"`
	// effect_reconciled: the call whose unknown outcome it decides, the verdict (applied,
	// not_applied), and for applied the output seen (Output) and its digest.
	Effect       string `json:"effect,omitempty"`
	Verdict      string `json:"verdict,omitempty"`
	OutputDigest string `json:"output_digest,omitempty"`

	// terminal rows, interrupt_requested, escalation, warning, ended
	Reason string          `json:"reason,omitempty"`
	Detail string          `json:"detail,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	// ResultDigest is a completed row's digest of its output as kept (sha256:<hex>).
	ResultDigest string   `json:"result_digest,omitempty"`
	RawText      *string  `json:"raw_text,omitempty"`
	Extracted    bool     `json:"extracted,omitempty"`
	RepairUsed   bool     `json:"repair_used,omitempty"`
	TurnIDs      []string `json:"turn_ids,omitempty"`
	Tokens       *Tokens  `json:"tokens,omitempty"`

	// ended
	Status string          `json:"status,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RunError       `json:"error,omitempty"`
}

// HeadMoved is an executor that committed on its own: the commit its worktree was to be at
// (Start), the HEAD it left (Head) and the stray ref that keeps it.
type HeadMoved struct {
	Start string `json:"start"`
	Head  string `json:"head"`
	Ref   string `json:"ref"`
}

// RunError is how a run that did not complete is recorded: the error the workflow threw, or
// why the run was stopped. Message is the code's fixed message; Detail is the error's own text
// (what the workflow threw, or crw's account naming the call, file or limit), and Diagnostic the
// bounded account whose correlation id the run's log line carries. Rows recorded before the
// code was always set carry only Message (the error's own text) and maybe Code.
type RunError struct {
	Message    string           `json:"message"`
	Detail     string           `json:"detail,omitempty"`
	Stack      string           `json:"stack,omitempty"`
	Code       string           `json:"code,omitempty"`   // a stable code: the thrown error's code property, or crw's
	Reason     string           `json:"reason,omitempty"` // the finer cause: the thrown error's reason property, or crw's
	Diagnostic *errs.Diagnostic `json:"diagnostic,omitempty"`
}

// Text is the error's own account: its detail, or its message when it has none.
func (e *RunError) Text() string {
	if e == nil {
		return ""
	}
	if e.Detail != "" {
		return e.Detail
	}
	return e.Message
}

// RunErrorOf records e as a run's error, with the stack of the workflow when it threw.
func RunErrorOf(e *errs.Error, stack string) *RunError {
	return &RunError{Message: e.Message, Detail: e.Detail, Stack: stack, Code: string(e.Code), Reason: e.Reason(), Diagnostic: e.Diagnostic}
}

var runIDPattern = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$`)

// ValidRunID reports whether id has the form of a run id: 20261130-052301-a1b2c3.
func ValidRunID(id string) bool { return runIDPattern.MatchString(id) }

// Digest is the sha256 of a text, as rows record digests (sha256:<hex>).
func Digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

// Canonical is an answer as stored and delivered: compact, with its key order and numbers
// exactly as written; doc as it is when it is not JSON.
func Canonical(doc json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, doc); err != nil {
		return doc
	}
	return b.Bytes()
}

// SameJSON reports whether two JSON texts are the same but for whitespace and the escaping of
// "<", ">", "&", U+2028 and U+2029 in their strings, which encoding/json writes escaped where
// a row keeps JSON as it is given (json.RawMessage): the input a run was created with and the
// one its started row holds, a decision's schema and the one its request row holds.
func SameJSON(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return false
	}
	var ex, ey bytes.Buffer
	json.HTMLEscape(&ex, x.Bytes())
	json.HTMLEscape(&ey, y.Bytes())
	return bytes.Equal(ex.Bytes(), ey.Bytes())
}
