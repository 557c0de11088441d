package engine

import (
	"errors"
	"fmt"
)

// Stable error codes (the errors-and-recovery contract). Each has one fixed message.
const (
	CodeInvalidRequest        = "invalid_request"
	CodeRunUnavailable        = "run_unavailable"
	CodeBudgetExhausted       = "budget_exhausted"
	CodeCapabilityUnavailable = "capability_unavailable"
	CodeIncompatibleSchema    = "incompatible_schema"
	CodeRevisionConflict      = "revision_conflict"
	CodeUnreconciledEffect    = "unreconciled_effect"
)

var fixedMessages = map[string]string{
	CodeInvalidRequest:        "The request shape, field combination, identifier, or bound is invalid.",
	CodeRunUnavailable:        "The Run cannot accept the requested operation.",
	CodeBudgetExhausted:       "The frozen Run or Workflow budget cannot admit more work.",
	CodeCapabilityUnavailable: "A configured capability or prerequisite is unavailable.",
	CodeIncompatibleSchema:    "Persisted state does not match the supported migrated schema.",
	CodeRevisionConflict:      "An immutable resource changed after the caller read it.",
	CodeUnreconciledEffect:    "An equivalent provider effect has an unknown outcome.",
}

// Exit codes of the command line.
const (
	ExitOK       = 0
	ExitFailed   = 1
	ExitBadInput = 2
)

// Diagnostic is the bounded account of a failed dependency. It never carries raw exceptions,
// provider text, payloads or credentials.
type Diagnostic struct {
	CorrelationID string `json:"correlationId,omitempty"`
	Phase         string `json:"phase,omitempty"`
	Reason        string `json:"reason,omitempty"`
	Disposition   string `json:"disposition,omitempty"`
	NextAction    string `json:"nextAction,omitempty"`
}

// Error is a user-facing error: a stable code, its fixed message, and what exactly is wrong
// (the file, field or line), plus a diagnostic when a dependency failed.
type Error struct {
	Code       string      `json:"code"`
	Message    string      `json:"message"`
	Detail     string      `json:"detail,omitempty"`
	Diagnostic *Diagnostic `json:"diagnostic,omitempty"`
	Exit       int         `json:"-"`
	Err        error       `json:"-"`
}

func (e *Error) Error() string {
	if e.Detail != "" {
		return e.Code + ": " + e.Detail
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error with code's fixed message; the exit code is 2 for invalid_request and
// 1 otherwise.
func Errorf(code, format string, args ...any) *Error {
	exit := ExitFailed
	if code == CodeInvalidRequest {
		exit = ExitBadInput
	}
	return &Error{Code: code, Message: fixedMessages[code], Detail: fmt.Sprintf(format, args...), Exit: exit}
}

// AsError finds the Error in err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// callError is an error thrown at an agent.call site with a code.
type callError struct {
	code string
	msg  string
}

func (e *callError) Error() string { return e.msg }
func (e *callError) Code() string  { return e.code }
