package loader

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
	"github.com/evanw/esbuild/pkg/api"

	"github.com/crw-dev/crw/runtime/sourcemap"
)

// wrapperHead opens the CommonJS function every module runs in. It is an
// esbuild banner, so the source map accounts for the extra line.
const wrapperHead = "(function (exports, require, module, __filename, __dirname) {"

// builtinPrograms caches compiled built-ins across loaders and runtimes,
// keyed by name and content: a *goja.Program is immutable and may run in
// several runtimes at once, and the same built-ins would be compiled for
// every run otherwise.
var builtinPrograms sync.Map // [32]byte -> *goja.Program

// diskPrograms caches the workflows' own files across loaders, keyed by name
// and content as builtinPrograms: a run created and run in one process (crw
// flow run) loads its workflow to check it and again to run it. It is bounded
// by the sources' bytes, and emptied when full, so edited workflows do not pile
// up in a long-lived process (crw mcp).
var diskPrograms = programCache{limit: 16 << 20}

type programCache struct {
	mu       sync.Mutex
	programs map[[32]byte]*goja.Program
	bytes    int
	limit    int
}

func programKey(kind sourceKind, file string, src []byte) [32]byte {
	return sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%s", kind, file, src)))
}

func (c *programCache) get(key [32]byte) *goja.Program {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.programs[key]
}

func (c *programCache) put(key [32]byte, size int, prg *goja.Program) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.limit {
		return
	}
	if c.programs == nil || c.bytes+size > c.limit {
		c.programs, c.bytes = map[[32]byte]*goja.Program{}, 0
	}
	if _, ok := c.programs[key]; !ok {
		c.programs[key], c.bytes = prg, c.bytes+size
	}
}

// esbuild's target: goja runs ES2022 syntax (class fields, private
// members, static blocks, optional chaining, ??, logical assignment) but
// not async generators or for await, which esbuild can lower. The regexp
// flags goja lacks cannot be lowered; marking them unsupported turns the
// literal into a RegExp constructor call, so the failure is a runtime error
// at the right line instead of a parse error for the whole file.
var unsupported = map[string]bool{
	"async-generator":      false,
	"for-await":            false,
	"regexp-match-indices": false,
	"regexp-set-notation":  false,
}

type sourceKind int

const (
	kindJS sourceKind = iota
	kindTS
	kindJSON
)

// moduleExts lists the extensions tried after a specifier without one, in
// order. The kinds are looked up by extension.
var moduleExts = []string{".js", ".ts", ".mjs", ".mts", ".cjs", ".cts", ".json"}

func kindOf(name string) (sourceKind, bool) {
	switch path.Ext(name) {
	case ".js", ".mjs", ".cjs":
		return kindJS, true
	case ".ts", ".mts", ".cts":
		return kindTS, true
	case ".json":
		return kindJSON, true
	}
	return 0, false
}

// program returns the compiled module of a JS or TS target.
func (l *Loader) program(t *target, src []byte) (*goja.Program, error) {
	if t.builtin {
		key := programKey(t.kind, t.file, src)
		if p, ok := builtinPrograms.Load(key); ok {
			return p.(*goja.Program), nil
		}
		prg, err := compile(t.file, t.name, t.kind, src, nil)
		if err == nil {
			builtinPrograms.Store(key, prg)
		}
		return prg, err
	}
	// A disk file is read once per Loader, so its path identifies its content.
	l.mu.Lock()
	prg := l.programs[t.real]
	l.mu.Unlock()
	if prg != nil {
		return prg, nil
	}
	key := programKey(t.kind, t.file, src)
	if l.onParse == nil { // a static pass is shown every module's AST: it compiles them all
		prg = diskPrograms.get(key)
	}
	if prg == nil {
		var err error
		if prg, err = compile(t.file, t.name, t.kind, src, l.onParse); err != nil {
			return nil, err
		}
		diskPrograms.put(key, len(src), prg)
	}
	l.mu.Lock()
	l.programs[t.real] = prg
	l.mu.Unlock()
	return prg, nil
}

// compile transforms one JS or TS file to a CommonJS function expression and
// compiles it. name is the source name shown in errors and stacks; module is
// the module name for LoadError.Module. onParse, when not nil, is shown the module's AST.
func compile(name, module string, kind sourceKind, src []byte, onParse func(*ast.Program, []byte)) (*goja.Program, error) {
	if le := checkNesting(name, module, src); le != nil {
		return nil, le
	}
	code, err := transform(name, module, kind, string(src))
	if err != nil {
		return nil, err
	}
	// The map is inline; refusing every other location keeps a stray
	// sourceMappingURL from reading the host file system.
	tree, err := parser.ParseFile(nil, name, code, 0, parser.WithSourceMapLoader(noSourceMaps))
	if err != nil {
		return nil, gojaSyntaxError(name, module, err)
	}
	if onParse != nil {
		onParse(tree, src)
	}
	prg, err := goja.CompileAST(tree, isModuleCode(name, kind, code))
	if err != nil {
		return nil, gojaSyntaxError(name, module, err)
	}
	return prg, nil
}

func noSourceMaps(string) ([]byte, error) {
	return nil, errors.New("loader: external source maps are not read")
}

// isModuleCode reports whether a file was an ES module (or TypeScript),
// which runs in strict mode, as it would natively; plain CommonJS stays
// sloppy, as in Node. esbuild does not say what it converted, but every ES
// module that imports or exports through a namespace uses its interop
// helpers.
func isModuleCode(name string, kind sourceKind, code string) bool {
	if kind == kindTS {
		return true
	}
	switch path.Ext(name) {
	case ".mjs":
		return true
	case ".cjs":
		return false
	}
	return strings.Contains(code, "__toCommonJS(") || strings.Contains(code, "__toESM(")
}

func transform(name, module string, kind sourceKind, src string) (string, error) {
	loader := api.LoaderJS
	if kind == kindTS {
		loader = api.LoaderTS
	}
	// A hashbang line would land before the wrapper; a comment of the same
	// length keeps every position in place.
	if strings.HasPrefix(src, "#!") {
		src = "//" + src[2:]
	}
	res := api.Transform(src, api.TransformOptions{
		Loader:   loader,
		Format:   api.FormatCommonJS,
		Target:   api.ES2022,
		Platform: api.PlatformNeutral,
		// The map is inlined below after sourcemap.Fix; esbuild's own inline
		// map would carry the 0-based columns goja misreads.
		Sourcemap:      api.SourceMapExternal,
		SourcesContent: api.SourcesContentExclude,
		Sourcefile:     name,
		Supported:      unsupported,
		Banner:         wrapperHead,
		LogLevel:       api.LogLevelSilent,
	})
	if len(res.Errors) > 0 {
		return "", esbuildError(name, module, res.Errors)
	}
	m, err := sourcemap.Fix(res.Map)
	if err != nil {
		return "", fmt.Errorf("loader: source map of %s: %w", name, err)
	}
	var b strings.Builder
	b.Grow(len(res.Code) + len(m)*4/3 + 64)
	b.Write(res.Code)
	b.WriteString("\n})\n")
	b.WriteString(sourcemap.Inline(m))
	b.WriteByte('\n')
	return b.String(), nil
}

func esbuildError(name, module string, msgs []api.Message) *LoadError {
	m := msgs[0]
	le := &LoadError{Code: CodeSyntax, Module: module, File: name, Message: m.Text}
	if loc := m.Location; loc != nil {
		le.Line = loc.Line
		// esbuild counts bytes from 0; count characters from 1 like goja.
		col := loc.Column
		if col > len(loc.LineText) {
			col = len(loc.LineText)
		}
		le.Column = utf8.RuneCountInString(loc.LineText[:col]) + 1
	}
	if len(msgs) > 1 {
		le.Message += fmt.Sprintf(" (and %d more errors)", len(msgs)-1)
	}
	return le
}

// gojaSyntaxError reports code esbuild accepted but goja cannot compile.
// The position would be one in the transformed code, so none is given.
func gojaSyntaxError(name, module string, err error) *LoadError {
	msg := err.Error()
	var el parser.ErrorList
	if errors.As(err, &el) && len(el) > 0 {
		msg = el[0].Message
	}
	return &LoadError{Code: CodeSyntax, Module: module, File: name,
		Message: "goja cannot compile the transformed code: " + msg}
}

// checkJSON checks a JSON module in Go before JSON.parse runs it in the
// runtime, so a syntax error has a position.
func checkJSON(name, module string, src []byte) error {
	var v any
	err := json.Unmarshal(src, &v)
	if err == nil {
		return nil
	}
	le := &LoadError{Code: CodeSyntax, Module: module, File: name, Message: err.Error()}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the offending byte too.
		le.Line, le.Column = lineCol(src, max(int(se.Offset)-1, 0))
	}
	return le
}

func lineCol(src []byte, off int) (line, col int) {
	if off > len(src) {
		off = len(src)
	}
	line, start := 1, 0
	for i := 0; i < off; i++ {
		if src[i] == '\n' {
			line++
			start = i + 1
		}
	}
	return line, utf8.RuneCount(src[start:off]) + 1
}
