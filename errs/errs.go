// Package errs holds the stable error codes users see, their fixed messages, and the bounded
// Diagnostic of a failed dependency (the errors-and-recovery contract). It is a leaf: the
// engine, the backends, the stores and the runtime all import it, and it imports nothing of
// theirs. Exit codes are not here: the command line decides them.
package errs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"unicode/utf8"
)

// Code is a stable error code.
type Code string

// The codes of the errors-and-recovery contract, and run_env_unusable of session calls.
const (
	InvalidRequest        Code = "invalid_request"
	InvalidAuthority      Code = "invalid_authority"
	OwnerMismatch         Code = "owner_mismatch"
	InsufficientScope     Code = "insufficient_scope"
	IncompatibleSchema    Code = "incompatible_schema"
	RevisionConflict      Code = "revision_conflict"
	IdempotencyConflict   Code = "idempotency_conflict"
	AgentUnavailable      Code = "agent_unavailable"
	BriefUnavailable      Code = "brief_unavailable"
	RunUnavailable        Code = "run_unavailable"
	SessionBusy           Code = "session_busy"
	WorkflowBusy          Code = "workflow_busy"
	ScheduleBusy          Code = "schedule_busy"
	EventTriggerBusy      Code = "event_trigger_busy"
	ConnectionUnavailable Code = "connection_unavailable"
	CapabilityUnavailable Code = "capability_unavailable"
	BudgetExhausted       Code = "budget_exhausted"
	ApprovalExpired       Code = "approval_expired"
	UnreconciledEffect    Code = "unreconciled_effect"
	RunEnvUnusable        Code = "run_env_unusable"
	// WorkflowFailed is a run whose workflow threw an error crw did not give a code of its own
	// (the workflow's own throw, a TypeError, a result that is not JSON).
	WorkflowFailed Code = "workflow_failed"
)

var messages = map[Code]string{
	InvalidRequest:        "The request shape, field combination, identifier, or bound is invalid.",
	InvalidAuthority:      "The presented authorization is invalid for the request.",
	OwnerMismatch:         "The request does not belong to the authenticated installation owner.",
	InsufficientScope:     "The client access level lacks the required capability.",
	IncompatibleSchema:    "Persisted state does not match the supported migrated schema.",
	RevisionConflict:      "An immutable resource changed after the caller read it.",
	IdempotencyConflict:   "An idempotency key was reused with different input.",
	AgentUnavailable:      "The Agent is missing, disabled, stale, or otherwise not admissible.",
	BriefUnavailable:      "An exact Brief revision is missing, deleting, or cannot be materialized.",
	RunUnavailable:        "The Run cannot accept the requested operation.",
	SessionBusy:           "Another exact conversation operation is active.",
	WorkflowBusy:          "The Workflow is processing a state transition.",
	ScheduleBusy:          "A Schedule occurrence admission is pending.",
	EventTriggerBusy:      "An Event Trigger occurrence is being admitted or recovered.",
	ConnectionUnavailable: "The Connection is not active or cannot currently dispatch.",
	CapabilityUnavailable: "A configured capability or prerequisite is unavailable.",
	BudgetExhausted:       "The frozen Run or Workflow budget cannot admit more work.",
	ApprovalExpired:       "The pending approval passed its validity window.",
	UnreconciledEffect:    "An equivalent provider effect has an unknown outcome.",
	RunEnvUnusable:        "The environment the Run recorded cannot be used by this process.",
	WorkflowFailed:        "The Workflow threw an error and the Run did not complete.",
}

// safeResponses are what a caller does on each code, as the contract says it.
var safeResponses = map[Code]string{
	InvalidRequest:        "Correct the request from the current tool schema. Do not add unadvertised fields.",
	InvalidAuthority:      "Reauthorize the client; do not reuse or forward the rejected token.",
	OwnerMismatch:         "Stop and verify the installation and GitHub identity.",
	InsufficientScope:     "Reauthorize at the required access level only if the broader authority is intended.",
	IncompatibleSchema:    "Stop admission and use the supported upgrade or recovery path.",
	RevisionConflict:      "Reread the exact resource, review the new revision, and decide again.",
	IdempotencyConflict:   "Use the original exact request, or a new key for genuinely new intent.",
	AgentUnavailable:      "Inspect the exact Agent and its current revision.",
	BriefUnavailable:      "Inspect the Brief reference and bind an available exact revision.",
	RunUnavailable:        "Inspect the Run timeline and terminal or waiting state.",
	SessionBusy:           "Inspect the Session and retry only after the current operation settles.",
	WorkflowBusy:          "Inspect it and retry the lifecycle action against its current revision.",
	ScheduleBusy:          "Inspect the Schedule and recent Run before retrying the lifecycle change.",
	EventTriggerBusy:      "Inspect occurrence history and wait for that exact occurrence to settle.",
	ConnectionUnavailable: "Inspect its exact lifecycle and returned next action.",
	CapabilityUnavailable: "Inspect the capability descriptor and its missing prerequisite or setup command.",
	BudgetExhausted:       "Inspect usage; start new work only after an explicit owner decision.",
	ApprovalExpired:       "Inspect the Run; do not treat the old approval as authority.",
	UnreconciledEffect:    "Verify the existing effect independently before reconciliation or retry.",
	RunEnvUnusable:        "Make the environment the Run recorded usable again (its TMPDIR), then retry the same request.",
	WorkflowFailed:        "Read the error's detail and the Workflow's stack, fix the Workflow or its input, then start a new Run.",
}

// Codes lists every code, in the order of the contract.
var Codes = []Code{
	InvalidRequest, InvalidAuthority, OwnerMismatch, InsufficientScope, IncompatibleSchema,
	RevisionConflict, IdempotencyConflict, AgentUnavailable, BriefUnavailable, RunUnavailable,
	SessionBusy, WorkflowBusy, ScheduleBusy, EventTriggerBusy, ConnectionUnavailable,
	CapabilityUnavailable, BudgetExhausted, ApprovalExpired, UnreconciledEffect, RunEnvUnusable,
	WorkflowFailed,
}

// Message is the code's fixed message ("" for a code the contract does not have).
func (c Code) Message() string { return messages[c] }

// SafeResponse is what a caller does on the code ("" for a code the contract does not have).
func (c Code) SafeResponse() string { return safeResponses[c] }

// Known reports whether c is one of Codes.
func (c Code) Known() bool { _, ok := messages[c]; return ok }

// Certainty says whether crw knows what became of the operation that failed.
type Certainty string

const (
	// Certain: what the diagnostic says happened did happen (nothing was sent, the run stopped).
	Certain Certainty = "certain"
	// Uncertain: the operation may or may not have taken effect (a request that got no answer).
	Uncertain Certainty = "uncertain"
)

// Disposition is what became of the operation that failed: one of Dispositions.
type Disposition = string

// The dispositions a diagnostic may have.
const (
	// NotStarted: crw refused or failed before the operation began; nothing of it happened.
	NotStarted Disposition = "not_started"
	// Stopped: the operation began and stopped; what it did is in the journal.
	Stopped Disposition = "stopped"
	// Held: the operation waits, held, for what its next action names.
	Held Disposition = "held"
	// UnknownOutcome: whether the operation took effect is not known.
	UnknownOutcome Disposition = "unknown"
)

// Dispositions lists every disposition, as the contract's docs give them.
var Dispositions = []Disposition{NotStarted, Stopped, Held, UnknownOutcome}

// KnownDisposition reports whether d is one of Dispositions.
func KnownDisposition(d string) bool {
	for _, k := range Dispositions {
		if d == k {
			return true
		}
	}
	return false
}

// Diagnostic is the bounded account of a failed dependency. It never carries raw exceptions,
// provider text, payloads, credentials or user content: the full account is in the log it
// names, on the line that carries its correlation id.
type Diagnostic struct {
	CorrelationID string    `json:"correlationId"`
	Certainty     Certainty `json:"certainty"`
	// Phase is what crw was doing: create, load, lease, journal, dispatch, replay, spawn, ...
	Phase string `json:"phase"`
	// Reason is the finer cause, a lower_snake word: divergence, lease_lost, codex_missing, ...
	Reason string `json:"reason"`
	// Disposition is what became of the operation: one of Dispositions.
	Disposition Disposition `json:"disposition"`
	// NextAction is what to do about it.
	NextAction string `json:"nextAction,omitempty"`
	// Log is where the full account is ("" until it was logged).
	Log string `json:"log,omitempty"`
}

// Error is an error a user sees: a stable code, its fixed message, a bounded detail that names
// the file, field, line or call concerned, and a diagnostic when a dependency failed or the
// code has a finer cause. Its cause, when it has one, goes to a log, never to the user.
type Error struct {
	Code       Code        `json:"code"`
	Message    string      `json:"message"`
	Detail     string      `json:"detail,omitempty"`
	Diagnostic *Diagnostic `json:"diagnostic,omitempty"`

	cause error
	field *FieldError
	// nextNaming is the next action with the request's fields written {FIELD} (NextNaming);
	// detailNaming the detail so written (NewNaming).
	nextNaming, detailNaming string
}

func (e *Error) Error() string {
	s := string(e.Code)
	if e.Diagnostic != nil && e.Diagnostic.Reason != "" && e.Diagnostic.Reason != s {
		s += " (" + e.Diagnostic.Reason + ")"
	}
	if e.Detail != "" {
		return s + ": " + e.Detail
	}
	return s + ": " + e.Message
}

// Unwrap returns the cause, so errors.Is sees through an Error to what it wraps.
func (e *Error) Unwrap() error { return e.cause }

// Cause is the full account of what went wrong, for the log.
func (e *Error) Cause() error { return e.cause }

// Reason is the diagnostic's reason, "" when the error has no diagnostic.
func (e *Error) Reason() string {
	if e.Diagnostic == nil {
		return ""
	}
	return e.Diagnostic.Reason
}

// New builds an Error with code's fixed message and a bounded detail.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: code.Message(), Detail: Bound(fmt.Sprintf(format, args...))}
}

// Because gives e a finer cause: a diagnostic with a correlation id, which the log line of its
// full account will carry. A diagnostic never has an empty phase, reason or disposition: an
// empty phase is "request", an empty reason the code itself, and a disposition that is not one
// of Dispositions is "unknown" (crw does not claim to know what it did not say).
func (e *Error) Because(phase, reason string, disposition Disposition, certainty Certainty) *Error {
	if phase == "" {
		phase = "request"
	}
	if reason == "" {
		reason = string(e.Code)
	}
	if !KnownDisposition(disposition) {
		disposition, certainty = UnknownOutcome, Uncertain
	}
	e.Diagnostic = &Diagnostic{CorrelationID: NewCorrelationID(), Certainty: certainty, Phase: phase, Reason: reason, Disposition: disposition}
	return e
}

// Next sets the diagnostic's next action. An error without a diagnostic is given one: a
// refusal of the request before anything was done.
func (e *Error) Next(action string) *Error {
	if e.Diagnostic == nil {
		e.Because("request", string(e.Code), NotStarted, Certain)
	}
	e.Diagnostic.NextAction = Bound(action)
	return e
}

// NewNaming is New whose detail names fields of the request, each written {FIELD}: called by
// the field's own name here, by its front end's name once Named, as NextNaming's are. It is
// for a detail about more than one field (a FieldError is about one).
func NewNaming(code Code, detail string) *Error {
	e := New(code, "%s", nameFields(detail, func(string) string { return "" }))
	e.detailNaming = detail
	return e
}

// NextNaming is Next with fields of the request in action, each written {FIELD}: called by
// the field's own name here, by its front end's name once Named (a flag, a tool's argument).
func (e *Error) NextNaming(action string) *Error {
	e.nextNaming = action
	return e.Next(nameFields(action, func(string) string { return "" }))
}

// nameFields is action with each {FIELD} called as name calls it, else FIELD.
func nameFields(action string, name func(field string) string) string {
	return fieldRef.ReplaceAllStringFunc(action, func(ref string) string {
		field := ref[1 : len(ref)-1]
		if n := name(field); n != "" {
			return n
		}
		return field
	})
}

var fieldRef = regexp.MustCompile(`\{[a-z_.]+\}`)

// As lets errors.As find the FieldError an error about a field carries.
func (e *Error) As(target any) bool {
	if p, ok := target.(**FieldError); ok && e.field != nil {
		*p = e.field
		return true
	}
	return false
}

// Wrap keeps err as e's cause: its text goes to a log, not to the user.
func (e *Error) Wrap(err error) *Error {
	e.cause = err
	return e
}

// As finds the Error in err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// CodeOf is the code of err's Error, or "" when it has none.
func CodeOf(err error) Code {
	if e, ok := As(err); ok {
		return e.Code
	}
	return ""
}

// MaxDetail bounds what a detail or a next action may hold.
const MaxDetail = 1024

// Bound cuts s to MaxDetail bytes at a rune boundary, saying how much was cut.
func Bound(s string) string {
	if len(s) <= MaxDetail {
		return s
	}
	// Room for the note; the note itself is short.
	keep := MaxDetail - 40
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return fmt.Sprintf("%s… (%d more bytes cut)", s[:keep], len(s)-keep)
}

// NewCorrelationID makes an opaque id that ties a diagnostic to its log line.
func NewCorrelationID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "crw-" + hex.EncodeToString(b[:])
}

// Coded is an error thrown into a workflow with a stable code and, optionally, a finer reason:
// the runtime sets both as properties of the JS Error.
type Coded interface {
	error
	Code() Code
	Reason() string
}

// Thrown is a Coded error: what a host method refuses at its call site.
type Thrown struct {
	code   Code
	reason string
	msg    string
}

// Throw builds a Thrown error.
func Throw(code Code, reason, format string, args ...any) *Thrown {
	return &Thrown{code: code, reason: reason, msg: fmt.Sprintf(format, args...)}
}

func (t *Thrown) Error() string  { return t.msg }
func (t *Thrown) Code() Code     { return t.code }
func (t *Thrown) Reason() string { return t.reason }
