package lint_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/runtime/lint"
	"github.com/crw-dev/crw/runtime/loader"
	"github.com/crw-dev/crw/runtime/runtimetest"
	"github.com/crw-dev/crw/runtime/vm"
)

func strict(b []byte) []loader.Problem {
	vs, err := schema.CheckStrict(b)
	if err != nil {
		return []loader.Problem{{Message: err.Error()}}
	}
	var out []loader.Problem
	for _, v := range vs {
		out = append(out, loader.Problem{Pointer: v.Pointer, Rule: v.Rule, Message: v.Message})
	}
	return out
}

// TestTheStaticPassFindsEachMistakeAtItsPlace: every module the workflow loads is passed over,
// with the original file, line and column of each mistake; a spread or a schema built elsewhere
// is left to the dry run.
func TestTheStaticPassFindsEachMistakeAtItsPlace(t *testing.T) {
	t.Parallel()
	c := lint.New(strict)
	wf, err := filepath.Abs("testdata/wf/main.js")
	require.NoError(t, err)
	_, err = vm.New(vm.Config{Workflow: wf, Host: runtimetest.NewHost(), Lint: c, Context: context.Background()})
	require.NoError(t, err)
	found, more := c.Findings()
	assert.Zero(t, more)
	var got []string
	for _, f := range found {
		got = append(got, fmt.Sprintf("%s:%d:%d %s: %s", filepath.Base(f.File), f.Line, f.Col, f.Rule, f.Message))
	}
	assert.ElementsMatch(t, []string{
		`main.js:2:10 no_such_export: the module crw has no export "crw": import crw from "crw"`,
		`main.js:9:50 unknown_option: agent.call: unknown option "promtp" (did you mean "prompt"?) (it takes role, prompt, schema, node, model, effort, resume)`,
		`main.js:9:25 missing_option: agent.call: option "prompt" is required`,
		`main.js:10:64 unknown_option: agent.call: unknown option "efort" (did you mean "effort"?) (it takes role, prompt, schema, node, model, effort, resume)`,
		`main.js:11:38 invalid_option: agent.call: role "reviwer" is not one of architect, executor, executor-t1, reviewer, explorer, critic (did you mean "reviewer"?)`,
		`main.js:11:71 invalid_option: agent.call: effort "max" is not one of none, minimal, low, medium, high, xhigh`,
		`main.js:12:58 invalid_option: agent.call: prompt is empty`,
		`main.js:6:15 schema_not_strict: agent.call: the schema is not strict: at "": objects must set "additionalProperties": false`,
		`main.js:16:3 nondeterministic: setTimeout is not available in a workflow: its timing cannot be replayed`,
		`main.js:18:26 schema_not_strict: agent.call: the schema is not strict: at "": objects must set "additionalProperties": false`,
		`helpers.js:4:53 unknown_option: agent.call: unknown option "modle" (did you mean "model"?) (it takes role, prompt, schema, node, model, effort, resume)`,
	}, got)
}

// TestTheStaticPassLeavesValidCodeAlone: an object of the workflow's own named agent, a
// parameter named as a constant elsewhere, a binding assigned again, a schema completed by
// assignments, and a setTimeout of the workflow's own are no mistakes.
func TestTheStaticPassLeavesValidCodeAlone(t *testing.T) {
	t.Parallel()
	c := lint.New(strict)
	wf, err := filepath.Abs("testdata/wf/valid.js")
	require.NoError(t, err)
	_, err = vm.New(vm.Config{Workflow: wf, Host: runtimetest.NewHost(), Lint: c, Context: context.Background()})
	require.NoError(t, err)
	found, _ := c.Findings()
	assert.Empty(t, found)
}

// TestANamedImportCrwDoesNotExportIsFoundAtTheImport, used or not.
func TestANamedImportCrwDoesNotExportIsFoundAtTheImport(t *testing.T) {
	t.Parallel()
	c := lint.New(strict)
	wf, err := filepath.Abs("testdata/wf/imports.js")
	require.NoError(t, err)
	_, err = vm.New(vm.Config{Workflow: wf, Host: runtimetest.NewHost(), Lint: c, Context: context.Background()})
	require.NoError(t, err)
	found, _ := c.Findings()
	var got []string
	for _, f := range found {
		got = append(got, fmt.Sprintf("%d:%d %s", f.Line, f.Col, f.Message))
	}
	assert.Equal(t, []string{
		`1:10 the module crw has no export "crw": import crw from "crw"`,
		`4:3 the module crw:agent has no export "nope"`,
	}, got)
}

// TestTypeImportsAreNoExports: TypeScript's inline type imports (import { agent, type
// CallResult } from "crw:agent", import crw, { type Verdict } from "crw") name types, which
// compile to nothing: no finding; a name that only starts with "type" is still checked.
func TestTypeImportsAreNoExports(t *testing.T) {
	t.Parallel()
	c := lint.New(strict)
	wf, err := filepath.Abs("testdata/wf/typed.ts")
	require.NoError(t, err)
	_, _ = vm.New(vm.Config{Workflow: wf, Host: runtimetest.NewHost(), Lint: c, Context: context.Background()})
	found, _ := c.Findings()
	var got []string
	for _, f := range found {
		got = append(got, fmt.Sprintf("%d:%d %s", f.Line, f.Col, f.Message))
	}
	assert.Equal(t, []string{`3:10 the module crw:agent has no export "typeOf"`}, got)
}
