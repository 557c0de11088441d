// Package loader turns a workflow file into its entry function inside a
// goja runtime.
//
// Every JS and TS file is held to the bound on nesting (package nesting),
// transformed to CommonJS by esbuild and compiled with a source map (package
// sourcemap), so errors and stacks point at the original file, line and
// column. Modules resolve through a closed table: the Go modules of
// Config.Native by exact name, crw:lib/<path> from the user lib dirs and the
// embedded built-ins, and relative paths confined to the workflow's folder.
// Nothing else is importable; no bare name ever reaches node_modules or the
// rest of the host file system.
//
// goja_nodejs's require is not used for resolution: it finds the importing
// module from the call stack and walks node_modules for bare names. Its
// ModuleLoader type is kept for the native modules.
//
// It is over 1,500 lines because resolution, transformation, the source maps' use and the
// closed module table are one boundary between a workflow's files and the VM: each check is
// made where the path it guards is decided.
package loader

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja_nodejs/require"

	"github.com/crw-dev/crw/runtime/jsutil"
)

// Problem is one violation found by Config.CheckSchema. Export is the export of the schema
// module it is in, which the loader fills in (LoadError.Problems).
type Problem struct {
	Export, Pointer, Rule, Message string
	// Line and Column are where the module declares the export (0 when it cannot tell).
	Line, Column int
}

// Config says where a workflow and its modules come from.
type Config struct {
	Entry string // the workflow file (any path; made absolute)
	// LibDirs are user folders served as crw:lib/<path>, in priority order.
	// The workflow folder's own lib/ folder, when it exists, is searched
	// before them.
	LibDirs []string
	// Builtin holds the embedded built-ins: "schemas.js" is crw:lib/schemas,
	// "x/y.ts" is crw:lib/x/y. It may be nil.
	Builtin fs.FS
	// Native holds the Go modules by exact name, e.g. "crw:agent", "crw".
	Native map[string]require.ModuleLoader
	// CheckSchema is the strict check applied to every export of a
	// crw:lib/schemas module. Nil skips the check.
	CheckSchema func(schema []byte) []Problem
	// OnParse, when not nil, is shown the AST of every module of the workflow's own as it is
	// parsed (a static pass: runtime/lint); the built-ins are not.
	OnParse func(prog *ast.Program, src []byte)
	// Kept, when not nil, is the only place the workflow's own files are found: each file's
	// content by the real path it was first loaded from (a run's code as its store keeps it,
	// so that a run loads the same code on any host). The disk is not read.
	Kept map[string][]byte
}

// Loader loads one workflow. It may serve several runtimes, one Main each,
// from any goroutines: each runtime gets its own module instances, while
// file contents and compiled programs are shared.
//
// Every disk file is read once. After the first successful Main the set of
// files is locked: a module that was not loaded then is refused instead of
// read, so Digest describes exactly the code that runs (the habit of k6's
// ModuleResolver.Lock).
type Loader struct {
	entry   *target
	disk    disk     // where the workflow's own files are
	dir     string   // the workflow folder, symlinks resolved
	libDirs []string // symlinks resolved, in priority order
	builtin fs.FS
	native  map[string]require.ModuleLoader
	check   func([]byte) []Problem
	onParse func(*ast.Program, []byte)

	mu       sync.Mutex
	sources  map[string]*source // real path -> content read from disk
	programs map[string]*goja.Program
	resolved map[string]*target // importer key + "\x00" + specifier
	locked   bool
}

type source struct {
	name string // as listed by Files
	data []byte
}

// New checks cfg and returns a Loader. Errors are *LoadError with code
// entry_invalid or config_invalid.
func New(cfg Config) (*Loader, error) {
	if cfg.Entry == "" {
		return nil, &LoadError{Code: CodeEntryInvalid, Message: "no workflow file given"}
	}
	abs, err := filepath.Abs(cfg.Entry)
	if err != nil {
		return nil, &LoadError{Code: CodeEntryInvalid, File: cfg.Entry, Message: err.Error()}
	}
	kind := kindJS
	switch filepath.Ext(abs) {
	case ".js", ".mjs", ".cjs":
	case ".ts", ".mts":
		kind = kindTS
	default:
		return nil, &LoadError{Code: CodeEntryInvalid, File: abs,
			Message: "a workflow must be a .js, .mjs, .cjs, .ts or .mts file"}
	}
	var d disk = hostDisk{}
	if cfg.Kept != nil {
		d = keptDisk(cfg.Kept)
	}
	real, err := d.realPath(abs)
	if err != nil {
		return nil, &LoadError{Code: CodeEntryInvalid, File: abs, Message: "workflow file not found"}
	}
	if !d.isFile(real) {
		return nil, &LoadError{Code: CodeEntryInvalid, File: abs, Message: "workflow is not a regular file"}
	}
	l := &Loader{
		disk:     d,
		dir:      filepath.Dir(real),
		builtin:  cfg.Builtin,
		native:   cfg.Native,
		check:    cfg.CheckSchema,
		onParse:  cfg.OnParse,
		sources:  make(map[string]*source),
		programs: make(map[string]*goja.Program),
		resolved: make(map[string]*target),
	}
	if own := filepath.Join(l.dir, "lib"); d.isDir(own) {
		l.libDirs = append(l.libDirs, own)
	}
	for _, dir := range cfg.LibDirs {
		abs, err := filepath.Abs(dir)
		if err == nil {
			abs, err = d.realPath(abs)
		}
		if err != nil || !d.isDir(abs) {
			return nil, &LoadError{Code: CodeConfigInvalid, File: dir, Message: "lib folder is not a directory"}
		}
		if !slices.Contains(l.libDirs, abs) {
			l.libDirs = append(l.libDirs, abs)
		}
	}
	l.entry = l.fileTarget(real, kind)
	return l, nil
}

// Main enables require in rt, evaluates the entry module and returns its
// entry function. It is meant to be called once per runtime; each call
// evaluates the module graph afresh in rt.
//
// A failure to load a module is returned as that *LoadError, even when it
// happened in a nested require. An exception thrown while a module was
// evaluated is returned as an error that wraps the *goja.Exception.
func (l *Loader) Main(rt *goja.Runtime) (goja.Callable, error) {
	s := newSession(l, rt)
	// The global require resolves like the entry module: it lets Go code
	// and the console reach the same module instances.
	if err := rt.Set("require", s.requireFunc(l.entry)); err != nil {
		return nil, err
	}
	exports, err := s.load(l.entry)
	if err != nil {
		return nil, l.mainError(s, err)
	}
	fn, err := l.entryFunc(s, exports)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.locked = true
	l.mu.Unlock()
	return fn, nil
}

func (l *Loader) mainError(s *session, err error) error {
	if le, ok := unwrapLoad(err); ok {
		return le
	}
	if ex, ok := err.(*goja.Exception); ok {
		return &evalError{file: l.entry.file, ex: ex, msg: s.in.Thrown(ex.Value()).String}
	}
	return err
}

// entryFunc finds the workflow's entry: a function assigned to
// module.exports, or a default export that is a function.
//
// The default export is read as a data property, or through its getter
// (esbuild's exports are getters): nothing here may throw into Go.
func (l *Loader) entryFunc(s *session, exports goja.Value) (goja.Callable, error) {
	if fn, ok := goja.AssertFunction(exports); ok {
		return fn, nil
	}
	found := "module.exports is " + describe(exports)
	if obj, ok := exports.(*goja.Object); ok && !jsutil.IsProxy(obj) {
		p, err := s.in.Data(obj, "default")
		if err != nil {
			return nil, &LoadError{Code: CodeNoEntry, Module: l.entry.name, File: l.entry.file,
				Message: "the workflow's exports cannot be read: " + err.Error()}
		}
		def := p.Value
		if get, ok := goja.AssertFunction(p.Getter); ok && p.Accessor {
			if def, err = get(obj); err != nil {
				return nil, l.mainError(s, err)
			}
		}
		if fn, ok := goja.AssertFunction(def); ok {
			return fn, nil
		}
		if def != nil && !goja.IsUndefined(def) {
			found = "the default export is " + describe(def)
		} else {
			found = "there is no default export"
		}
	}
	return nil, &LoadError{Code: CodeNoEntry, Module: l.entry.name, File: l.entry.file,
		Message: "the workflow must export a function as default (export default async function main(input) {...}): " + found}
}

// Files lists the files read from disk so far, relative to the workflow
// folder; files of a lib folder outside it are named crw:lib/<path>.
func (l *Loader) Files() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.sources))
	for _, s := range l.sources {
		out = append(out, s.name)
	}
	sort.Strings(out)
	return out
}

// Sources is the content of every file read from disk so far, by its real path.
func (l *Loader) Sources() map[string][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]byte, len(l.sources))
	for real, s := range l.sources {
		out[real] = s.data
	}
	return out
}

// Digest is "sha256:<hex>" over the name and content of every file read
// from disk, in the order of Files. Built-ins are part of the binary and
// are not included. It is complete once Main has returned.
func (l *Loader) Digest() string {
	l.mu.Lock()
	srcs := make([]*source, 0, len(l.sources))
	for _, s := range l.sources {
		srcs = append(srcs, s)
	}
	l.mu.Unlock()
	sort.Slice(srcs, func(i, j int) bool {
		if srcs[i].name != srcs[j].name {
			return srcs[i].name < srcs[j].name
		}
		// Two lib dirs outside the workflow folder may list the same name.
		return bytes.Compare(srcs[i].data, srcs[j].data) < 0
	})
	h := sha256.New()
	var n [8]byte
	for _, s := range srcs {
		// Length prefixes keep distinct file sets from hashing alike.
		binary.BigEndian.PutUint64(n[:], uint64(len(s.name)))
		h.Write(n[:])
		h.Write([]byte(s.name))
		binary.BigEndian.PutUint64(n[:], uint64(len(s.data)))
		h.Write(n[:])
		h.Write(s.data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Warm compiles the entry module of the workflow cfg names as a load of it would, into the
// programs every loader of the process shares: a command that reads a run's journal before it
// loads the workflow (a resume, a shadow) has it compiled meanwhile, on a core the read leaves
// idle, and its load finds it done (~5-10 ms on the critical path, most of it esbuild's first
// transform). What it cannot read or compile is left for the load to report: it does nothing a
// load would not, and keeps nothing but the program, under its content's key.
func Warm(cfg Config) {
	cfg.OnParse = nil // a static pass is shown every module as it loads: nothing is cached for it
	l, err := New(cfg)
	if err != nil {
		return
	}
	if src, err := l.read(l.entry); err == nil {
		_, _ = l.program(l.entry, src)
	}
}
