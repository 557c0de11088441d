package loader

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"

	"github.com/crw-dev/crw/userfile"

	"github.com/dop251/goja"

	"github.com/crw-dev/crw/runtime/jsutil"
)

// session is one module graph: the module instances of one runtime.
type session struct {
	l    *Loader
	rt   *goja.Runtime
	mods map[string]*goja.Object // target key -> module object

	// Taken before any module runs, so a script that replaces the JSON
	// globals cannot change what the schema check sees, and thrown values
	// are read without running script code.
	stringify goja.Callable
	parse     goja.Callable
	in        *jsutil.Intrinsics
}

func newSession(l *Loader, rt *goja.Runtime) *session {
	s := &session{l: l, rt: rt, mods: make(map[string]*goja.Object)}
	json := rt.Get("JSON").ToObject(rt)
	s.stringify, _ = goja.AssertFunction(json.Get("stringify"))
	s.parse, _ = goja.AssertFunction(json.Get("parse"))
	s.in = jsutil.Capture(rt)
	return s
}

// requireFunc is the require given to the module from. A failure is thrown
// as a GoError wrapping the Go error, so Main can find a *LoadError again
// however many modules the exception crossed; an exception thrown by the
// required module is rethrown as is, keeping its stack.
func (s *session) requireFunc(from *target) goja.Value {
	fn := s.rt.ToValue(func(call goja.FunctionCall) goja.Value {
		spec, ok := call.Argument(0).Export().(string)
		if !ok {
			panic(s.rt.NewTypeError("require: the module name must be a string"))
		}
		v, err := s.require(from, spec)
		if err != nil {
			switch err.(type) {
			case *goja.Exception, *goja.InterruptedError, *goja.StackOverflowError:
				// Rethrown as is: an interrupt must stay uncatchable.
				panic(err)
			}
			panic(s.rt.NewGoError(err))
		}
		return v
	})
	// goja names a Go function after its Go symbol; stack frames read the
	// name property, so "at require (native)" is what a stack shows.
	_ = fn.(*goja.Object).DefineDataProperty("name", s.rt.ToValue("require"), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	return fn
}

func (s *session) require(from *target, spec string) (goja.Value, error) {
	t, err := s.l.resolve(from, spec)
	if err != nil {
		if le, ok := unwrapLoad(err); ok {
			s.locate(le, from)
		}
		return nil, err
	}
	return s.load(t)
}

// locate points a resolution error at the require call (the import
// statement, through the source map) in the importing file.
func (s *session) locate(le *LoadError, from *target) {
	if le.File != from.file || le.Line != 0 {
		return
	}
	for _, f := range s.rt.CaptureCallStack(8, nil) {
		if f.SrcName() == from.file {
			p := f.Position()
			le.Line, le.Column = p.Line, p.Column
			return
		}
	}
}

// load evaluates a module once per runtime. The module is cached before it
// runs, so a cycle sees the exports built so far, as in CommonJS; a module
// that fails, or whose native loader panics, is dropped from the cache.
func (s *session) load(t *target) (goja.Value, error) {
	if m := s.mods[t.key]; m != nil {
		return m.Get("exports"), nil
	}
	rt := s.rt
	mod := rt.NewObject()
	_ = mod.Set("exports", rt.NewObject())
	_ = mod.Set("id", t.name)
	_ = mod.Set("filename", t.file)
	_ = mod.Set("loaded", false)
	s.mods[t.key] = mod
	done := false
	defer func() {
		if !done {
			delete(s.mods, t.key)
		}
	}()
	if err := s.eval(t, mod); err != nil {
		return nil, err
	}
	_ = mod.Set("loaded", true)
	exports := mod.Get("exports")
	if isSchemaModule(t.name) {
		if err := s.checkSchemas(t, exports); err != nil {
			return nil, err
		}
	}
	done = true
	return exports, nil
}

func (s *session) eval(t *target, mod *goja.Object) error {
	if t.native != nil {
		t.native(s.rt, mod)
		return nil
	}
	src, err := s.l.read(t)
	if err != nil {
		return err
	}
	if t.kind == kindJSON {
		if le := checkNesting(t.file, t.name, src); le != nil {
			return le
		}
		if err := checkJSON(t.file, t.name, src); err != nil {
			return err
		}
		v, err := s.parse(goja.Undefined(), s.rt.ToValue(string(src)))
		if err != nil {
			return err
		}
		return mod.Set("exports", v)
	}
	prg, err := s.l.program(t, src)
	if err != nil {
		return err
	}
	wrapper, err := s.rt.RunProgram(prg)
	if err != nil {
		return err
	}
	fn, ok := goja.AssertFunction(wrapper)
	if !ok {
		return fmt.Errorf("loader: %s: module wrapper is not a function", t.file)
	}
	dir := path.Dir(t.file)
	if t.isDisk() {
		dir = filepath.Dir(t.real)
	}
	exports := mod.Get("exports")
	_, err = fn(exports, exports, s.requireFunc(t), mod, s.rt.ToValue(t.file), s.rt.ToValue(dir))
	return err
}

// read returns the source of a module. A disk file is read once per Loader
// and recorded for Files and Digest; once the Loader is locked, a file not
// read before is refused.
func (l *Loader) read(t *target) ([]byte, error) {
	if t.builtin {
		data, err := fs.ReadFile(l.builtin, t.fsPath)
		if err != nil {
			return nil, errorf(CodeReadFailed, t.name, t.file, "%v", err)
		}
		return data, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if src := l.sources[t.real]; src != nil {
		return src.data, nil
	}
	if l.locked {
		return nil, errorf(CodeModuleLocked, t.name, t.file,
			"module %s was not loaded when the workflow was evaluated; import it at the top level", t.name)
	}
	limit := int64(userfile.MaxModule)
	if t.kind == kindJSON {
		limit = userfile.MaxJSONModule
	}
	data, err := l.disk.read(t.real, limit)
	if err != nil {
		return nil, errorf(CodeReadFailed, t.name, t.file, "%v", err)
	}
	l.sources[t.real] = &source{name: l.fileName(t.real), data: data}
	return data, nil
}
