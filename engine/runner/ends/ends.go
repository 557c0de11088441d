// Package ends is how a run records why it ended otherwise than with a result: what its
// workflow threw, a cancel, a workflow that did not load.
package ends

import (
	"errors"
	"regexp"
	"strings"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/runtime/loader"
	"github.com/crw-dev/crw/runtime/vm"
)

// ThrownError is how a run records what its workflow threw: the code crw gave the error (a
// host method's refusal, a limit), else workflow_failed; its fixed message; the thrown text as
// the detail, with the stack; and a diagnostic whose next action names where it threw. The
// journal's ended row is its full account: what a workflow throws is its own and may quote its
// calls' answers, so it is not written to the run's log.
func ThrownError(se *vm.ScriptError) *journal.RunError {
	code, reason, detail := errs.Code(se.Code), se.Reason, se.Message
	next := code.SafeResponse()
	if !code.Known() {
		if se.Code != "" {
			detail += " (its code: " + se.Code + ")"
		}
		code = errs.WorkflowFailed
		next = "fix the workflow or its input"
		if at := topFrame(se.Stack); at != "" {
			next += " (it threw at " + at + ")"
		}
		next += ", then run it again"
	}
	if reason == "" {
		reason = "threw"
	}
	// The detail is what was thrown, whole: the runtime read at most 4 KiB of it already.
	e := (&errs.Error{Code: code, Message: code.Message(), Detail: detail}).
		Because("workflow", reason, errs.Stopped, errs.Certain).Next(next)
	return journal.RunErrorOf(e, se.Stack)
}

// topFrame is the place of a stack's first frame in a file: "file:line:col".
func topFrame(stack string) string {
	for _, line := range strings.Split(stack, "\n") {
		if m := framePlace.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			return m[1]
		}
	}
	return ""
}

// framePlace is the place of a stack frame: "at fn (file:line:col)" or "at file:line:col".
var framePlace = regexp.MustCompile(`^at (?:.* \()?([^()]+:\d+:\d+)\)?$`)

// CancelledError is how a cancelled run's end records why it ended.
func CancelledError(run string) *journal.RunError {
	e := errs.New(errs.RunUnavailable, "the run was cancelled").
		Because("lifecycle", "cancelled", errs.Stopped, errs.Certain).Next("crw flow show " + run + " shows what it did")
	return journal.RunErrorOf(e, "")
}

// LoadError turns a workflow that does not load into invalid input naming the place.
func LoadError(err error) error {
	var le *loader.LoadError
	if errors.As(err, &le) {
		return errs.New(errs.InvalidRequest, "%s", le.Error()).Wrap(err)
	}
	var lim *vm.LimitError
	if errors.As(err, &lim) {
		return errs.New(errs.BudgetExhausted, "the workflow did not load: %s", lim.Message).Wrap(err).
			Because("load", lim.Reason, "not_started", errs.Certain)
	}
	var se *vm.ScriptError
	if errors.As(err, &se) {
		return errs.New(errs.InvalidRequest, "the workflow threw while loading: %s\n%s", se.Message, se.Stack).Wrap(err)
	}
	return errs.New(errs.InvalidRequest, "%v", err).Wrap(err)
}
