package types_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/internal/depstest"
	"github.com/crw-dev/crw/lib/types"
	"github.com/crw-dev/crw/lib/types/internal/libdecl"
)

func TestDeclareTypesASchemaByItsAnswers(t *testing.T) {
	t.Parallel()
	got, err := types.Declare("review", map[string]json.RawMessage{
		"finding": json.RawMessage(`{"type": "object", "description": "One finding.", "properties": {
			"severity": {"type": "string", "enum": ["major", "minor"]},
			"lines": {"type": "array", "items": {"type": ["integer", "null"]}},
			"where": {"$ref": "#/$defs/place"},
			"kind": {"anyOf": [{"const": "bug"}, {"type": "boolean"}]}},
			"required": ["severity", "lines", "where"], "additionalProperties": false,
			"$defs": {"place": {"type": "object", "properties": {"file": {"type": "string", "description": "The */ path."}}, "required": ["file"], "additionalProperties": false}}}`),
	})
	require.NoError(t, err)
	assert.Equal(t, `// crw:lib/review: its schemas, each typed by the answers it admits. Written by `+"`crw types`"+`.
import type { Schema } from "../agent";

/** One finding. */
export type Finding = {
  readonly "kind"?: "bug" | boolean;
  readonly "lines": readonly (null | number)[];
  readonly "severity": "major" | "minor";
  readonly "where": {
    /** The * / path. */
    readonly "file": string;
  };
};
export declare const finding: Schema<Finding>;
`, string(got))
}

func TestARecursiveSchemaEndsInAny(t *testing.T) {
	t.Parallel()
	got, err := types.Declare("tree", map[string]json.RawMessage{
		"node": json.RawMessage(`{"$ref": "#/$defs/n", "$defs": {"n": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "required": ["kids"], "additionalProperties": false}}}`),
	})
	require.NoError(t, err)
	assert.Contains(t, string(got), "readonly any[]")
}

// tscDir writes the declarations and the given workflows into a folder and runs tsc there.
func tsc(t *testing.T, workflows map[string]string) (string, error) {
	t.Helper()
	bin := os.Getenv("CRW_TSC")
	if bin == "" {
		t.Skip("CRW_TSC names no tsc (bash .ci/install-tsc.sh installs one)")
	}
	dir := t.TempDir()
	files, err := types.Files()
	require.NoError(t, err)
	for name, src := range workflows {
		files[name] = []byte(src)
	}
	for name, b := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	cmd := exec.Command(bin, "-p", ".", "--pretty", "false")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func readDir(t *testing.T, dir string, keep func(string) bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() || !keep(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}

func TestTscPassesTheShippedWorkflows(t *testing.T) {
	t.Parallel()
	wfs := readDir(t, "../../workflows", func(n string) bool { return strings.HasSuffix(n, ".js") || strings.HasSuffix(n, ".ts") })
	require.Len(t, wfs, 3)
	out, err := tsc(t, wfs)
	assert.NoError(t, err, out)
}

// TestTscFindsAuthoringMistakes: each mistake is reported at its line, before any call is made.
func TestTscFindsAuthoringMistakes(t *testing.T) {
	t.Parallel()
	out, err := tsc(t, readDir(t, "testdata/mistakes", func(string) bool { return true }))
	require.Error(t, err)
	var got []string
	for _, m := range regexp.MustCompile(`(?m)^(\S+)\((\d+),\d+\): error (TS\d+)`).FindAllStringSubmatch(out, -1) {
		got = append(got, m[1]+":"+m[2]+" "+m[3])
	}
	slices.Sort(got)
	assert.Equal(t, []string{
		"mistakes.js:10 TS2367", // status "complete"
		"mistakes.js:12 TS2339", // a forgotten await's result used as a CallResult
		"mistakes.js:14 TS2367", // an answer's enum
		"mistakes.js:15 TS2367", // reason outside the closed set
		"mistakes.js:16 TS2304", // setTimeout: no timers in a workflow
		"mistakes.js:17 TS2339", // crw.lg
		"mistakes.js:18 TS2322", // role planner
		"mistakes.js:7 TS2561",  // promtp, with did-you-mean
		"mistakes.js:8 TS2561",  // efort, with did-you-mean
		"mistakes.js:9 TS2322",  // effort "max"
		"named.ts:1 TS2614",     // import { crw } from "crw"
	}, got, out)
	assert.Contains(t, out, "Did you mean to write 'prompt'?")
	assert.Contains(t, out, "Did you mean to use 'import crw from \"crw\"' instead?")
}

// TestTheLibDeclarationsAreUpToDate: the declarations crw embeds for the built-in crw:lib
// modules are what their schemas make now (after a change to lib/*.js: go generate ./lib/types).
func TestTheLibDeclarationsAreUpToDate(t *testing.T) {
	t.Parallel()
	want, err := libdecl.Files()
	require.NoError(t, err)
	files, err := types.Files()
	require.NoError(t, err)
	got := map[string][]byte{}
	for path, data := range files {
		if name, ok := strings.CutPrefix(path, types.Folder+"/lib/"); ok {
			got[name] = data
		}
	}
	require.NotEmpty(t, want)
	for name := range want {
		assert.Equal(t, string(want[name]), string(got[name]), "lib/types/lib/%s is stale: go generate ./lib/types", name)
	}
	assert.Len(t, got, len(want), "a declaration of a module lib/ no longer has")
}

// TestTypesRunsNoModule: lib/types carries the lib modules' declarations made when crw was
// built; writing them runs no JavaScript (it is not built with the VM).
func TestTypesRunsNoModule(t *testing.T) {
	t.Parallel()
	depstest.Forbid(t, map[string][]string{
		"github.com/crw-dev/crw/lib/types": {"github.com/crw-dev/crw/runtime/vm", "github.com/dop251/goja"},
	})
}
