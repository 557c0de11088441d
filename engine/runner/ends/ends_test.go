package ends_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/engine/runner/ends"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/runtime/loader"
	"github.com/crw-dev/crw/runtime/vm"
)

func TestWhatAWorkflowThrewIsRecordedWithWhereItThrew(t *testing.T) {
	got := ends.ThrownError(&vm.ScriptError{Message: "Error: boom", Code: "E_MINE",
		Stack: "Error: boom\n    at check (file:///w/wf.js:12:9)\n    at main (file:///w/wf.js:30:3)"})
	assert.Equal(t, string(errs.WorkflowFailed), got.Code)
	assert.Equal(t, "threw", got.Reason)
	assert.Equal(t, "Error: boom (its code: E_MINE)", got.Detail)
	assert.Equal(t, "fix the workflow or its input (it threw at file:///w/wf.js:12:9), then run it again", got.Diagnostic.NextAction)

	known := ends.ThrownError(&vm.ScriptError{Message: "over budget", Code: string(errs.BudgetExhausted), Reason: "budget"})
	assert.Equal(t, string(errs.BudgetExhausted), known.Code, "a code crw gave stays")
	assert.Equal(t, "budget", known.Reason)
	assert.Equal(t, errs.BudgetExhausted.SafeResponse(), known.Diagnostic.NextAction)
}

func TestAWorkflowThatDoesNotLoadIsInvalidInput(t *testing.T) {
	le := &loader.LoadError{Code: "module_not_found", Module: "./lib.js", File: "/w/wf.js", Line: 3, Column: 1, Message: "no such module"}
	err := ends.LoadError(fmt.Errorf("load: %w", le))
	assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err))
	assert.True(t, errors.Is(err, le))
	thrown := ends.LoadError(&vm.ScriptError{Message: "TypeError: x", Stack: "at wf.js:1:1"})
	assert.Equal(t, errs.InvalidRequest, errs.CodeOf(thrown))
	assert.Contains(t, thrown.Error(), "the workflow threw while loading: TypeError: x")
}
