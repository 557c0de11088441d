package types_test

import (
	"encoding/json"
	"fmt"
	"maps"
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
	"github.com/crw-dev/crw/lib"
	"github.com/crw-dev/crw/lib/types"
	"github.com/crw-dev/crw/lib/types/internal/libdecl"
	"github.com/crw-dev/crw/runtime/vm"
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
	}, tscFindings(out), out)
	assert.Contains(t, out, "Did you mean to write 'prompt'?")
	assert.Contains(t, out, "Did you mean to use 'import crw from \"crw\"' instead?")
}

// readTree is every file under dir, by its path relative to dir.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	}))
	return out
}

// tscFindings are tsc's errors as "file:line TScode", sorted.
func tscFindings(out string) []string {
	var got []string
	for _, m := range regexp.MustCompile(`(?m)^(\S+)\((\d+),\d+\): error (TS\d+)`).FindAllStringSubmatch(out, -1) {
		got = append(got, m[1]+":"+m[2]+" "+m[3])
	}
	slices.Sort(got)
	return got
}

// TestTscInfersAnswersFromSchemas: an answer's type is read from its schema written as const,
// in the call, in a module of the workflow's lib, or given to schema() (in JavaScript too);
// testdata/inferred holds what each must be (Eq fails to compile otherwise), under strict.
func TestTscInfersAnswersFromSchemas(t *testing.T) {
	t.Parallel()
	out, err := tsc(t, readTree(t, "testdata/inferred"))
	assert.NoError(t, err, out)
}

// TestTscFindsMisreadAnswers: what tsc reports of answers read against their inferred types.
func TestTscFindsMisreadAnswers(t *testing.T) {
	t.Parallel()
	out, err := tsc(t, readTree(t, "testdata/misread"))
	require.Error(t, err)
	assert.Equal(t, []string{
		"helper.js:8 TS2322",    // schema(): an enum's string assigned to a number
		"helper.js:9 TS2339",    // a property the schema does not have
		"misread.ts:10 TS18047", // a nullable field read as present
		"misread.ts:11 TS2532",  // an optional field (not in required) read as present
		"misread.ts:13 TS2339",  // a call without a schema answers text
		"misread.ts:7 TS2322",   // a string field assigned to a number
		"misread.ts:8 TS2339",   // a property the schema does not have
		"misread.ts:9 TS2367",   // a value the enum does not have
	}, tscFindings(out), out)
	assert.Contains(t, out, `'"approve" | "reject"' and '"approved"' have no overlap`)
}

// TestFromSchemaReadsTheLibSchemasAsDeclared: FromSchema of each built-in schema, written as
// const, is the type crw types declares for it: the type-level reading and Declare agree.
func TestFromSchemaReadsTheLibSchemasAsDeclared(t *testing.T) {
	t.Parallel()
	exports, err := vm.Exports(lib.FS, "schemas.js")
	require.NoError(t, err)
	require.NotEmpty(t, exports)
	var b strings.Builder
	b.WriteString(`import type { FromSchema } from "crw:agent";
import type * as schemas from "crw:lib/schemas";
type Eq<A, B> = (<X>() => X extends A ? 1 : 2) extends (<X>() => X extends B ? 1 : 2) ? true : false;
function expect<T extends true>(): void {}
`)
	for _, name := range slices.Sorted(maps.Keys(exports)) {
		typ := strings.ToUpper(name[:1]) + name[1:]
		fmt.Fprintf(&b, "const %s = %s as const;\nexpect<Eq<FromSchema<typeof %s>, schemas.%s>>();\n", name, exports[name], name, typ)
	}
	out, err := tsc(t, map[string]string{"lib.ts": b.String()})
	assert.NoError(t, err, out)
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
