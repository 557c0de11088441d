package loader_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/dop251/goja"
	nodereq "github.com/dop251/goja_nodejs/require"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/runtime/jsutil"
	"github.com/crw-dev/crw/runtime/loader"
)

// builtins stands in for the embedded lib/ folder.
var builtins = fstest.MapFS{
	"schemas.js": {Data: []byte(`export const plan = {
  type: "object",
  additionalProperties: false,
  required: ["steps"],
  properties: { steps: { type: "array", items: { type: "string" } } },
};
`)},
	"x/y.ts": {Data: []byte("import { z } from \"./z\";\nexport const y: string = \"-\" + z;\n")},
	"x/z.js": {Data: []byte("export const z = \"z\";\n")},
}

// natives stands in for the Go modules crw:agent and crw.
func natives() map[string]nodereq.ModuleLoader {
	return map[string]nodereq.ModuleLoader{
		"crw:agent": func(rt *goja.Runtime, module *goja.Object) {
			agent := rt.NewObject()
			_ = agent.Set("call", func(opts map[string]any) map[string]any {
				return map[string]any{"status": "completed", "node": opts["node"], "output": map[string]any{}}
			})
			_ = module.Get("exports").ToObject(rt).Set("agent", agent)
		},
		"crw": func(rt *goja.Runtime, module *goja.Object) {
			_ = module.Get("exports").ToObject(rt).Set("now", func() int64 { return 42 })
		},
	}
}

// strictCheck stands in for the real strictness check: every object schema
// must close additionalProperties.
func strictCheck(schema []byte) []loader.Problem {
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return []loader.Problem{{Rule: "invalid_json", Message: err.Error()}}
	}
	var out []loader.Problem
	var walk func(ptr string, v any)
	walk = func(ptr string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if x["type"] == "object" && x["additionalProperties"] != false {
				out = append(out, loader.Problem{Pointer: ptr, Rule: "additional_properties",
					Message: "an object schema must set additionalProperties to false"})
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(ptr+"/"+k, x[k])
			}
		case []any:
			for i, e := range x {
				walk(ptr+"/"+strconv.Itoa(i), e)
			}
		}
	}
	walk("", doc)
	return out
}

func config(entry string) loader.Config {
	return loader.Config{Entry: entry, Builtin: builtins, Native: natives(), CheckSchema: strictCheck}
}

func load(t *testing.T, cfg loader.Config) (*loader.Loader, *goja.Runtime, goja.Callable, error) {
	t.Helper()
	l, err := loader.New(cfg)
	require.NoError(t, err)
	rt := goja.New()
	fn, err := l.Main(rt)
	return l, rt, fn, err
}

// run calls the entry function and settles its promise, if any.
func run(t *testing.T, rt *goja.Runtime, fn goja.Callable, input any) any {
	t.Helper()
	v, err := fn(goja.Undefined(), rt.ToValue(input))
	require.NoError(t, err)
	if p, ok := v.Export().(*goja.Promise); ok {
		require.Equal(t, goja.PromiseStateFulfilled, p.State(), "promise: %v", p.Result())
		return p.Result().Export()
	}
	return v.Export()
}

// real is the path the loader reports for a fixture: absolute, symlinks
// resolved.
func real(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	require.NoError(t, err)
	r, err := filepath.EvalSymlinks(abs)
	require.NoError(t, err)
	return r
}

func loadError(t *testing.T, err error, code string) *loader.LoadError {
	t.Helper()
	require.Error(t, err)
	var le *loader.LoadError
	require.True(t, errors.As(err, &le), "want *LoadError, got %T: %v", err, err)
	assert.Equal(t, code, le.Code, "%v", le)
	return le
}

// writeTree creates files (slash paths) under a new temporary folder.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return dir
}

func TestESMWorkflow(t *testing.T) {
	t.Parallel()
	l, rt, fn, err := load(t, config("testdata/esm/wf.js"))
	require.NoError(t, err)
	got := run(t, rt, fn, map[string]any{"task": "x", "steps": []any{1, 2, 3}})
	assert.Equal(t, map[string]any{
		"node": "plan", "doubled": int64(6), "label": "helper", "answer": int64(42),
		"now": int64(42), "hasPlan": true, "keys": "answer,extra,name",
	}, got)
	assert.Equal(t, []string{"data.json", "helper.js", "util/index.js", "wf.js"}, l.Files())
}

func TestTSWorkflow(t *testing.T) {
	t.Parallel()
	l, rt, fn, err := load(t, config("testdata/ts/wf.ts"))
	require.NoError(t, err)
	got := run(t, rt, fn, map[string]any{"task": "t", "steps": []any{map[string]any{"weight": 2}, map[string]any{"weight": 3}}})
	assert.Equal(t, map[string]any{"node": "run", "summary": "t:5"}, got)
	// types.ts holds only types: its import is erased and the file never read.
	assert.Equal(t, []string{"summary.ts", "wf.ts"}, l.Files())
}

func TestCJSWorkflow(t *testing.T) {
	t.Parallel()
	_, rt, fn, err := load(t, config("testdata/cjs/wf.js"))
	require.NoError(t, err)
	got := run(t, rt, fn, map[string]any{"task": "bob"})
	assert.Equal(t, map[string]any{"node": "review", "greeting": "hello bob", "size": int64(3)}, got)
}

func TestModernSyntax(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"wf.ts": `
async function* gen(): AsyncGenerator<number> { yield 1; yield 2; }
class Box { static made = 0; #v: number; constructor(v: number) { this.#v = v; Box.made++; } get v() { return this.#v; } }
export default async function main(input: { a?: { b?: number } }) {
  let sum = 0;
  for await (const n of gen()) sum += n;
  const fallback = input.a?.b ?? 10;
  let x: number | null = null;
  x ??= 5;
  const { v } = new Box(sum);
  const f = async (...xs: number[]) => Math.max(...xs);
  return [v, fallback, x, await f(1, 7, 3), Box.made, 2 ** 3];
}
`})
	_, rt, fn, err := load(t, config(filepath.Join(dir, "wf.ts")))
	require.NoError(t, err)
	got := run(t, rt, fn, map[string]any{})
	assert.Equal(t, []any{int64(3), int64(10), int64(5), int64(7), int64(1), int64(8)}, got)

	dir = writeTree(t, map[string]string{"wf.mjs": "#!/usr/bin/env crw\nexport default () => { throw new Error(\"x\"); };\n"})
	_, _, fn, err = load(t, config(filepath.Join(dir, "wf.mjs")))
	require.NoError(t, err)
	_, err = fn(goja.Undefined())
	var ex *goja.Exception
	require.True(t, errors.As(err, &ex))
	stack := loader.FormatStack(ex)
	assert.Contains(t, stack, "wf.mjs:2:30)", "a hashbang line keeps positions")
}

func TestStrictness(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"esm.js": `export default () => { undeclared = 1; return undeclared; };`,
		"ts.ts":  `export default () => { (globalThis as any).x = 1; return (function (this: unknown) { return this; })(); };`,
		"cjs.js": `module.exports = () => { undeclared = 2; return undeclared; };`,
	})
	_, _, fn, err := load(t, config(filepath.Join(dir, "esm.js")))
	require.NoError(t, err)
	_, err = fn(goja.Undefined())
	assert.ErrorContains(t, err, "ReferenceError", "ES modules are strict")

	_, rt, fn, err := load(t, config(filepath.Join(dir, "ts.ts")))
	require.NoError(t, err)
	assert.Nil(t, run(t, rt, fn, nil), "TypeScript is strict")

	_, rt, fn, err = load(t, config(filepath.Join(dir, "cjs.js")))
	require.NoError(t, err)
	assert.Equal(t, int64(2), run(t, rt, fn, nil), "CommonJS stays sloppy")
}

func TestUserLib(t *testing.T) {
	t.Parallel()
	cfg := config("testdata/userlib/wf.ts")
	cfg.LibDirs = []string{"testdata/sharedlib"}
	l, rt, fn, err := load(t, cfg)
	require.NoError(t, err)
	assert.Equal(t, "HI BOB!-z", run(t, rt, fn, map[string]any{"who": "bob"}))
	assert.Equal(t, []string{"crw:lib/shared/fmt.js", "lib/greet.ts", "lib/prefix.js", "wf.ts"}, l.Files())
}

func TestLibDirPriority(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"wf/wf.js":       `export { default } from "crw:lib/who";`,
		"first/who.js":   `export default () => "first";`,
		"second/who.ts":  `export default () => "second";`,
		"second/only.js": `export default 1;`,
	})
	cfg := config(filepath.Join(dir, "wf/wf.js"))
	cfg.LibDirs = []string{filepath.Join(dir, "first"), filepath.Join(dir, "second")}
	_, rt, fn, err := load(t, cfg)
	require.NoError(t, err)
	assert.Equal(t, "first", run(t, rt, fn, nil))
}

func TestLibRelativeStaysInLib(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"wf.js":     `import { a } from "crw:lib/a"; export default () => a;`,
		"helper.js": `export const h = 1;`,
		"lib/a.js":  `export { h as a } from "../helper.js";`,
	})
	_, _, _, err := load(t, config(filepath.Join(dir, "wf.js")))
	le := loadError(t, err, loader.CodeModuleOutside)
	assert.Equal(t, "../helper.js", le.Module)
	assert.Equal(t, filepath.Join(real(t, dir), "lib", "a.js"), le.File)
	assert.Contains(t, le.Message, "outside the lib folder")
}

func TestConflict(t *testing.T) {
	t.Parallel()
	_, _, _, err := load(t, config("testdata/conflict/wf.js"))
	le := loadError(t, err, loader.CodeModuleConflict)
	assert.Equal(t, "crw:lib/schemas", le.Module)
	assert.Contains(t, le.Message, real(t, "testdata/conflict/lib/schemas.js"))
	assert.Contains(t, le.Message, "built-in crw:lib/schemas.js")
	assert.Equal(t, 1, le.Line)
}

func TestEscape(t *testing.T) {
	t.Parallel()
	t.Run("dotdot", func(t *testing.T) {
		t.Parallel()
		_, _, _, err := load(t, config("testdata/escape/sub/wf.js"))
		le := loadError(t, err, loader.CodeModuleOutside)
		assert.Equal(t, "../outside.js", le.Module)
		assert.Equal(t, real(t, "testdata/escape/sub/wf.js"), le.File)
		assert.Contains(t, le.Message, "outside the workflow folder")
	})
	t.Run("symlink", func(t *testing.T) {
		t.Parallel()
		dir := writeTree(t, map[string]string{
			"outside/secret.js": `export const secret = 1;`,
			"wf/wf.js":          `import { secret } from "./link.js"; export default () => secret;`,
			"wf/dir.js":         `import { secret } from "./linkdir/secret"; export default () => secret;`,
			"wf/ok.js":          `import { v } from "./inner"; export default () => v;`,
			"wf/real/inner.js":  `export const v = "inside";`,
		})
		require.NoError(t, os.Symlink(filepath.Join(dir, "outside/secret.js"), filepath.Join(dir, "wf/link.js")))
		require.NoError(t, os.Symlink(filepath.Join(dir, "outside"), filepath.Join(dir, "wf/linkdir")))
		require.NoError(t, os.Symlink(filepath.Join(dir, "wf/real/inner.js"), filepath.Join(dir, "wf/inner.js")))

		_, _, _, err := load(t, config(filepath.Join(dir, "wf/wf.js")))
		le := loadError(t, err, loader.CodeModuleOutside)
		assert.Contains(t, le.Message, filepath.Join(real(t, dir), "outside", "secret.js"))

		_, _, _, err = load(t, config(filepath.Join(dir, "wf/dir.js")))
		loadError(t, err, loader.CodeModuleOutside)

		// A link that stays inside the folder is fine.
		_, rt, fn, err := load(t, config(filepath.Join(dir, "wf/ok.js")))
		require.NoError(t, err)
		assert.Equal(t, "inside", run(t, rt, fn, nil))
	})
}

func TestUnknownModules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, spec string
		line             int
	}{
		{"bare", "testdata/unknown/bare.js", "lodash", 1},
		{"crw", "testdata/unknown/crw.ts", "crw:nope", 2},
		{"absolute", "testdata/unknown/abs.js", "/etc/passwd", 1},
		{"node core", "testdata/unknown/node.js", "fs", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, _, err := load(t, config(tt.file))
			le := loadError(t, err, loader.CodeModuleUnknown)
			file := real(t, tt.file)
			assert.Equal(t, tt.spec, le.Module)
			assert.Equal(t, file, le.File)
			assert.Equal(t, tt.line, le.Line)
			assert.Contains(t, le.Message, strconv.Quote(tt.spec))
			assert.Contains(t, le.Message, "imported by "+file)
			assert.Contains(t, le.Message, "crw, crw:agent, crw:lib/schemas, crw:lib/x/y, crw:lib/x/z")
			assert.True(t, strings.HasPrefix(err.Error(), file+":"+strconv.Itoa(tt.line)+":"), err.Error())
		})
	}
}

func TestMissingRelative(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"wf.js": "\n\nimport x from \"./nope\";\nexport default () => x;\n"})
	_, _, _, err := load(t, config(filepath.Join(dir, "wf.js")))
	le := loadError(t, err, loader.CodeModuleNotFound)
	assert.Equal(t, "./nope", le.Module)
	assert.Equal(t, 3, le.Line)
}

func TestSyntaxErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, entry, file string
		line, col         int
	}{
		{"ts", "testdata/syntax/bad.ts", "testdata/syntax/bad.ts", 6, 26},
		{"js", "testdata/syntax/bad.js", "testdata/syntax/bad.js", 4, 5},
		{"nested js", "testdata/syntax/nested.ts", "testdata/syntax/bad.js", 4, 5},
		{"json", "testdata/syntax/json.js", "testdata/syntax/bad.json", 4, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, _, err := load(t, config(tt.entry))
			le := loadError(t, err, loader.CodeSyntax)
			assert.Equal(t, real(t, tt.file), le.File)
			assert.Equal(t, tt.line, le.Line, le.Error())
			assert.Equal(t, tt.col, le.Column, le.Error())
			assert.True(t, strings.HasPrefix(le.Error(), real(t, tt.file)+":"+strconv.Itoa(tt.line)+":"+strconv.Itoa(tt.col)+": "))
		})
	}
}

// stripped is throw/wf.ts with its types blanked out, column for column.
// goja runs it untransformed to give the positions the stack must match.
const stripped = `



function helper(x    )         {
  if (x.n > 0) {
    throw new Error("bad n " + x.n);
  }
  return x.n;
}

function main(input    )         {
  const out         = helper(input);
  return out;
}
`

func TestExceptionStack(t *testing.T) {
	t.Parallel()
	file := real(t, "testdata/throw/wf.ts")
	_, rt, fn, err := load(t, config("testdata/throw/wf.ts"))
	require.NoError(t, err)
	_, err = fn(goja.Undefined(), rt.ToValue(map[string]any{"n": 1}))
	var ex *goja.Exception
	require.True(t, errors.As(err, &ex), "%T", err)
	msg, stack := loader.FormatException(ex, jsutil.Capture(rt))
	assert.Equal(t, "Error: bad n 1", msg)
	frames := strings.Split(stack, "\n")
	require.GreaterOrEqual(t, len(frames), 2, stack)

	// The same code, untransformed, in goja.
	want := goja.New()
	_, err = want.RunScript(file, stripped+"main({n: 1})")
	var wantEx *goja.Exception
	require.True(t, errors.As(err, &wantEx))
	wantStack := loader.FormatStack(wantEx)
	wantFrames := strings.Split(wantStack, "\n")
	assert.Equal(t, "at helper ("+file+":7:11)", frames[0])
	assert.Equal(t, wantFrames[0], frames[0])
	// goja places a call at its "(", for which esbuild emits no mapping; the
	// frame falls back to the start of the call expression.
	assert.Equal(t, "at main ("+file+":13:23)", frames[1])
	assert.True(t, strings.HasPrefix(wantFrames[1], "at main ("+file+":13:"), wantFrames[1])
}

func TestTopLevelException(t *testing.T) {
	t.Parallel()
	for _, entry := range []string{"testdata/throw/top.ts", "testdata/throw/nested.js"} {
		_, rt, _, err := load(t, config(entry))
		require.Error(t, err)
		var le *loader.LoadError
		assert.False(t, errors.As(err, &le))
		var ex *goja.Exception
		require.True(t, errors.As(err, &ex), "%T %v", err, err)
		msg, stack := loader.FormatException(ex, jsutil.Capture(rt))
		assert.Equal(t, "TypeError: not ready", msg)
		assert.Contains(t, stack, real(t, "testdata/throw/top.ts")+":5:9)")
		assert.Contains(t, err.Error(), "TypeError: not ready")
	}
	_, _, _, err := load(t, config("testdata/throw/nested.js"))
	var ex *goja.Exception
	require.True(t, errors.As(err, &ex))
	stack := loader.FormatStack(ex)
	assert.Contains(t, stack, real(t, "testdata/throw/nested.js")+":1:")
}

func TestSchemaModules(t *testing.T) {
	t.Parallel()
	const violation = `crw:lib/schemas/review: export "review": /properties/findings/items: additional_properties: `
	for _, entry := range []string{"wf.ts", "direct.js", "relative.js"} {
		t.Run(entry, func(t *testing.T) {
			t.Parallel()
			_, _, _, err := load(t, config("testdata/schemas/"+entry))
			le := loadError(t, err, loader.CodeSchemaNotStrict)
			assert.Equal(t, "crw:lib/schemas/review", le.Module)
			assert.Equal(t, real(t, "testdata/schemas/lib/schemas/review.ts"), le.File)
			assert.Contains(t, le.Message, violation)
		})
	}
	t.Run("strict", func(t *testing.T) {
		t.Parallel()
		_, rt, fn, err := load(t, config("testdata/schemas/good.ts"))
		require.NoError(t, err)
		assert.Equal(t, []any{true, false}, run(t, rt, fn, nil))
	})
	t.Run("not a schema", func(t *testing.T) {
		t.Parallel()
		_, _, _, err := load(t, config("testdata/schemas/notschema.js"))
		le := loadError(t, err, loader.CodeSchemaNotStrict)
		assert.NotContains(t, le.Message, `export "plan"`)
		assert.Contains(t, le.Message, `crw:lib/schemas/mixed: export "version": (root): not_a_schema: a schema must be a JSON object, got a number`)
		assert.Contains(t, le.Message, `export "tags": (root): not_a_schema: a schema must be a JSON object, got an array`)
		// Each problem, with its export, for crw schema check to list.
		var exports []string
		for _, p := range le.Problems {
			exports = append(exports, p.Export+" "+p.Rule)
		}
		assert.Contains(t, exports, "version not_a_schema")
		assert.Contains(t, exports, "tags not_a_schema")
		assert.NotContains(t, exports, "plan not_a_schema")
	})
	t.Run("many loose exports", func(t *testing.T) {
		// Each export is placed at its declaration and told in the module's order, up to a
		// bound of 100 exports: past it (a module of thousands of them, each a scan of the
		// source) the rest are told after, without a place.
		t.Parallel()
		var src strings.Builder
		for i := 1000; i > 0; i-- { // declared from e1000 down: not the exports' order by name
			fmt.Fprintf(&src, "export const e%d = { type: \"object\", properties: {} };\n", i)
		}
		dir := writeTree(t, map[string]string{
			"wf.js":               `import { e1 } from "crw:lib/schemas/many"; export default () => e1;`,
			"lib/schemas/many.js": src.String(),
		})
		_, _, _, err := load(t, config(filepath.Join(dir, "wf.js")))
		le := loadError(t, err, loader.CodeSchemaNotStrict)
		require.Len(t, le.Problems, 1000)
		placed, last := 0, 0
		for i, p := range le.Problems {
			if p.Line == 0 {
				assert.GreaterOrEqual(t, i, 100, "the exports without a place come last")
				continue
			}
			placed++
			var n int
			_, err := fmt.Sscanf(p.Export, "e%d", &n)
			require.NoError(t, err)
			assert.Equal(t, 1001-n, p.Line, "%s is told at its declaration", p.Export)
			assert.Greater(t, p.Line, last, "in the module's order")
			last = p.Line
		}
		assert.Equal(t, 100, placed, "the exports placed")
		assert.Equal(t, le.Problems[0].Line, le.Line, "the error points at the first placed")
	})
	t.Run("builtin", func(t *testing.T) {
		t.Parallel()
		dir := writeTree(t, map[string]string{"wf.js": `import "crw:lib/schemas"; export default () => 1;`})
		cfg := config(filepath.Join(dir, "wf.js"))
		cfg.Builtin = fstest.MapFS{"schemas/index.js": {Data: []byte(`exports.open = { type: "object" };`)}}
		_, _, _, err := load(t, cfg)
		le := loadError(t, err, loader.CodeSchemaNotStrict)
		assert.Equal(t, "crw:lib/schemas/index.js", le.File)
		assert.Contains(t, le.Message, `crw:lib/schemas: export "open": (root): additional_properties: `)
	})
	t.Run("no checker", func(t *testing.T) {
		t.Parallel()
		cfg := config("testdata/schemas/direct.js")
		cfg.CheckSchema = nil
		_, _, _, err := load(t, cfg)
		require.NoError(t, err)
	})
}

func TestNoEntry(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"testdata/noentry/named.js":  "there is no default export",
		"testdata/noentry/object.ts": "the default export is an object",
	}
	for entry, found := range tests {
		_, _, _, err := load(t, config(entry))
		le := loadError(t, err, loader.CodeNoEntry)
		assert.Equal(t, real(t, entry), le.File)
		assert.Contains(t, le.Message, found)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"wf.txt": "x", "wf.js": "export default () => 1;"})
	for _, entry := range []string{"", filepath.Join(dir, "nope.js"), dir, filepath.Join(dir, "wf.txt")} {
		_, err := loader.New(loader.Config{Entry: entry})
		loadError(t, err, loader.CodeEntryInvalid)
	}
	_, err := loader.New(loader.Config{Entry: filepath.Join(dir, "wf.js"), LibDirs: []string{filepath.Join(dir, "none")}})
	loadError(t, err, loader.CodeConfigInvalid)
}

func TestEvaluatedOnce(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"wf.js":     `import { a } from "./a"; import { b } from "./b.js"; export default () => [a, b, globalThis.count];`,
		"a.js":      `export { n as a } from "./count.js";`,
		"b.ts":      `export { n as b } from "./count";`,
		"count.js":  `globalThis.count = (globalThis.count || 0) + 1; export const n = globalThis.count;`,
		"late.js":   `export default "late";`,
		"lazy.js":   `export default () => require("./late.js").default;`,
		"lazyok.js": `import "./count.js"; export default () => require("./count").n;`,
	})
	l, rt, fn, err := load(t, config(filepath.Join(dir, "wf.js")))
	require.NoError(t, err)
	assert.Equal(t, []any{int64(1), int64(1), int64(1)}, run(t, rt, fn, nil))
	files := l.Files()
	digest := l.Digest()

	// The same Loader serves a second runtime from what it read.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "count.js"), []byte("export const n = 99;"), 0o644))
	rt2 := goja.New()
	fn2, err := l.Main(rt2)
	require.NoError(t, err)
	assert.Equal(t, []any{int64(1), int64(1), int64(1)}, run(t, rt2, fn2, nil))
	assert.Equal(t, files, l.Files())
	assert.Equal(t, digest, l.Digest())

	// A file first required after loading is refused; one loaded before is served.
	_, _, fn, err = load(t, config(filepath.Join(dir, "lazy.js")))
	require.NoError(t, err)
	_, err = fn(goja.Undefined())
	loadError(t, err, loader.CodeModuleLocked)
	_, rt, fn, err = load(t, config(filepath.Join(dir, "lazyok.js")))
	require.NoError(t, err)
	assert.Equal(t, int64(99), run(t, rt, fn, nil))
}

func TestCycle(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"wf.js": `import { b } from "./b.js"; export const a = 1; export default () => b();`,
		"b.js":  `import { a } from "./wf.js"; export const b = () => a + 1;`,
	})
	_, rt, fn, err := load(t, config(filepath.Join(dir, "wf.js")))
	require.NoError(t, err)
	assert.Equal(t, int64(2), run(t, rt, fn, nil))
}

func TestDigest(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"wf.js":     `import { double } from "./helper.js"; import d from "./data.json"; export default () => double(d.n);`,
		"helper.js": `export const double = (n) => n * 2;`,
		"data.json": `{"n": 2}`,
	}
	dir := writeTree(t, files)
	digest := func() string {
		l, _, _, err := load(t, config(filepath.Join(dir, "wf.js")))
		require.NoError(t, err)
		assert.Equal(t, []string{"data.json", "helper.js", "wf.js"}, l.Files())
		return l.Digest()
	}
	d1 := digest()
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, d1)
	assert.Equal(t, d1, digest())
	assert.Equal(t, d1, digest(), "stable across loaders")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "helper.js"), []byte(`export const double = (n) => n * 3;`), 0o644))
	d2 := digest()
	assert.NotEqual(t, d1, d2)

	// The same content in another folder digests alike: names are relative.
	other := writeTree(t, files)
	l, _, _, err := load(t, config(filepath.Join(other, "wf.js")))
	require.NoError(t, err)
	assert.Equal(t, d1, l.Digest())
}

func TestGlobalRequire(t *testing.T) {
	t.Parallel()
	_, rt, _, err := load(t, config("testdata/esm/wf.js"))
	require.NoError(t, err)
	v, err := rt.RunString(`[require("crw").now(), require("./helper.js").label, require("crw:lib/x/y").y]`)
	require.NoError(t, err)
	assert.Equal(t, []any{int64(42), "helper", "-z"}, v.Export())
	_, err = rt.RunString(`require("lodash")`)
	loadError(t, err, loader.CodeModuleUnknown)
}

// BenchmarkLoad loads a 48-line ESM workflow that imports crw:lib/schemas
// into a new runtime. "new loader" is the cost of a run: the workflow is
// transformed and compiled, the built-ins come from the shared cache.
// "same loader" is another runtime of the same run (nothing compiled).
func BenchmarkLoad(b *testing.B) {
	cfg := config("testdata/bench/wf.js")
	b.Run("new loader", func(b *testing.B) {
		for b.Loop() {
			l, err := loader.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := l.Main(goja.New()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("same loader", func(b *testing.B) {
		l, err := loader.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := l.Main(goja.New()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestModuleSizeLimits: a JSON module over 1 MiB and a source over 4 MiB are refused before
// they are parsed (goja spends hundreds of bytes on each value of a literal); the error names
// the file and the limit.
func TestModuleSizeLimits(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"json.js":    "import d from \"./data.json\";\nexport default () => d;\n",
		"data.json":  "[" + strings.Repeat("0,", 1<<19) + "0]",
		"src.js":     "import b from \"./big.js\";\nexport default () => b;\n",
		"big.js":     "export default 1;\n//" + strings.Repeat("x", 4<<20),
		"ok.js":      "import d from \"./small.json\";\nexport default () => d;\n",
		"small.json": "[" + strings.Repeat("0,", 1<<18) + "0]",
	})
	_, _, _, err := load(t, config(filepath.Join(dir, "json.js")))
	le := loadError(t, err, loader.CodeReadFailed)
	assert.Contains(t, le.Error(), "data.json: file too large: 1048579 bytes, the limit is 1048576")
	_, _, _, err = load(t, config(filepath.Join(dir, "src.js")))
	le = loadError(t, err, loader.CodeReadFailed)
	assert.Contains(t, le.Error(), "big.js: file too large")
	assert.Contains(t, le.Error(), "the limit is 4194304")
	_, _, _, err = load(t, config(filepath.Join(dir, "ok.js")))
	require.NoError(t, err)
}
