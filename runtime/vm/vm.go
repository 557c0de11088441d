// Package vm runs one workflow script in its own goja runtime: it wires the loader, the event
// loop and the modules together, and reaches the engine only through Host.
package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja_nodejs/require"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/runtime/eventloop"
	"github.com/crw-dev/crw/runtime/jsutil"
	"github.com/crw-dev/crw/runtime/lint"
	"github.com/crw-dev/crw/runtime/loader"
	"github.com/crw-dev/crw/runtime/modules/agent"
	"github.com/crw-dev/crw/runtime/modules/crw"
	"github.com/crw-dev/crw/runtime/natives"
)

// Host is what the engine gives a run's script.
type Host interface {
	agent.Caller
	crw.Host
	// CheckSchema applies the strict structured-output rules to a schema.
	CheckSchema(schema []byte) []loader.Problem
}

// Idler is a host that holds results back and may release one when the script has nothing
// else to do (see eventloop.Loop.SetIdle).
type Idler interface {
	Idle()
}

// Waker is a host that may hold a result back while the script waits: it is given a function,
// safe to call from any goroutine, that makes a waiting script's loop call Idle again.
type Waker interface {
	SetWake(wake func())
}

// onParse is the loader's hook for a static pass, when one is asked for.
func onParse(c *lint.Collector) func(*ast.Program, []byte) {
	if c == nil {
		return nil
	}
	return c.Module
}

// Returner is a host told when the workflow's entry function has returned (its promise
// settled), on the loop goroutine, after the callback in which it did: what is still under way
// then reaches no one.
type Returner interface {
	Returned()
}

// Poster is a host that hands the loop work of its own from other goroutines: it is given the
// loop's Post (see eventloop.Loop.Post).
type Poster interface {
	SetPost(post func(func() error))
}

// Config is one run's script and its surroundings.
type Config struct {
	Workflow string          // the workflow file
	LibDirs  []string        // user folders served as crw:lib/<path>
	Builtin  fs.FS           // embedded crw:lib modules
	Input    json.RawMessage // the run's input (null when absent)
	Seed     uint64          // seeds Math.random
	Host     Host
	Limits   Limits // zero fields take their defaults
	// Context, when it ends, interrupts the loading of the modules (a signal, a cancel).
	Context context.Context
	// Lint, when not nil, is given every module of the workflow's own as it is parsed: a static
	// pass over them (crw flow check).
	Lint *lint.Collector
	// Kept, when not nil, are the workflow's own files as a run keeps them (loader.Config.Kept):
	// they are loaded, and the disk is not read.
	Kept map[string][]byte
}

// ReasonNondeterministic is the reason of an error thrown for something a replay could not
// repeat (a timer), and of a workflow whose promise never settles.
const ReasonNondeterministic = "nondeterministic"

// NeverSettled is the error of a workflow whose promise is pending with nothing left that could
// settle it.
const NeverSettled = "the workflow's promise never settled: it awaits something that is not an agent call"

// ScriptError is a workflow that threw (or rejected): its message and source-mapped stack.
type ScriptError struct {
	Message string
	Stack   string
	Code    string // the thrown error's code property, when it has one
	Reason  string // the thrown error's reason property, when it has one
}

func (e *ScriptError) Error() string { return e.Message }

// VM is one loaded workflow, ready to run once.
type VM struct {
	cfg    Config
	rt     *goja.Runtime
	in     *jsutil.Intrinsics // taken before the script runs: what crw reads script values with
	loop   *eventloop.Loop
	loader *loader.Loader
	main   goja.Callable
	// tracker follows agent.call's promises: which ones nobody awaited (Unobserved).
	tracker agent.Tracker

	limits  Limits
	natives *natives.Guards // the guards of the natives goja cannot interrupt

	mu        sync.Mutex
	unhandled []*goja.Promise
	result    *goja.Promise // the entry function's promise: its rejection is the run's error, not an unhandled one
}

// Warm compiles the workflow cfg names (its entry module) ahead, in the background, for a New
// of the same workflow to find compiled (loader.Warm): called by a command before it reads what
// it needs to run the workflow.
func Warm(cfg Config) {
	go loader.Warm(loader.Config{Entry: cfg.Workflow, LibDirs: cfg.LibDirs, Builtin: cfg.Builtin, Kept: cfg.Kept})
}

// New builds the runtime and loads the workflow: its modules are evaluated and its entry
// function found. A load failure is a *loader.LoadError or wraps a *goja.Exception.
func New(cfg Config) (*VM, error) {
	// Checked here, or a bad input would surface as a SyntaxError of the script.
	if len(cfg.Input) > 0 && !json.Valid(cfg.Input) {
		return nil, errors.New("vm: the run's input is not valid JSON")
	}
	v := &VM{cfg: cfg, rt: goja.New(), loop: eventloop.New(), limits: cfg.Limits.WithDefaults()}
	rt := v.rt
	v.in = jsutil.Capture(rt)
	rt.SetMaxCallStackSize(v.limits.StackDepth)
	guards, err := natives.Install(rt, v.limits.HeapBytes)
	if err != nil {
		return nil, err
	}
	v.natives = guards
	rt.SetFieldNameMapper(goja.TagFieldNameMapper("json", true))
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	rt.SetRandSource(rng.Float64)
	rt.SetTimeSource(cfg.Host.Now)
	rt.SetPromiseRejectionTracker(v.trackRejection)
	if idler, ok := cfg.Host.(Idler); ok {
		v.loop.SetIdle(idler.Idle)
	}
	if waker, ok := cfg.Host.(Waker); ok {
		waker.SetWake(v.loop.Wake)
	}
	if poster, ok := cfg.Host.(Poster); ok {
		poster.SetPost(v.loop.Post)
	}
	_ = rt.Set("console", crw.Console(rt, v.in, cfg.Host))
	for _, name := range []string{"setTimeout", "setInterval", "setImmediate", "clearTimeout", "clearInterval", "queueMicrotask"} {
		name := name
		_ = rt.Set(name, jsutil.Func(rt, name, func(goja.FunctionCall) goja.Value {
			panic(jsutil.NewError(rt, errs.InvalidRequest, ReasonNondeterministic, name+" is not available in a workflow: its timing cannot be replayed"))
		}))
	}

	l, err := loader.New(loader.Config{
		Entry:   cfg.Workflow,
		LibDirs: cfg.LibDirs,
		Builtin: cfg.Builtin,
		Native: map[string]require.ModuleLoader{
			"crw:agent": agent.Loader(v.loop, v.in, cfg.Host, &v.tracker),
			"crw":       crw.Loader(cfg.Input, v.in, v.loop, cfg.Host),
		},
		CheckSchema: cfg.Host.CheckSchema,
		OnParse:     onParse(cfg.Lint),
		Kept:        cfg.Kept,
	})
	if err != nil {
		return nil, err
	}
	v.loader = l
	ctx := cfg.Context
	if ctx == nil {
		ctx = context.Background()
	}
	g := v.guard(ctx, v.limits.LoadTime, &LimitError{Reason: ReasonLoadTime, Message: fmt.Sprintf(
		"the workflow's modules did not finish loading within %s (--max-load-time)", v.limits.LoadTime)})
	main, err := l.Main(rt)
	g.release()
	if le := g.limit(); le != nil {
		return nil, le
	}
	// A limit that fired as loading ended leaves an interrupt pending that would stop Run's
	// first instruction: the modules loaded, so it is void. Run looks at its own context first.
	rt.ClearInterrupt()
	v.natives.Stopping(false)
	if err != nil {
		var so *goja.StackOverflowError
		if errors.As(err, &so) {
			return nil, v.stackLimit()
		}
		return nil, err
	}
	v.main = main
	return v, nil
}

// Digest is the digest of every file the workflow loaded.
func (v *VM) Digest() string { return v.loader.Digest() }

// Sources is the content of every file the workflow loaded from disk, by its real path.
func (v *VM) Sources() map[string][]byte { return v.loader.Sources() }

// Unobserved lists the agent.calls whose promises the workflow never awaited nor observed,
// once Run has returned (see agent.Tracker); more counts those past what the list holds.
func (v *VM) Unobserved() (calls []agent.Unobserved, more int) {
	return v.tracker.Unobserved()
}

// Run calls the entry function with the input and runs the loop until the workflow's promise
// settles and every call it issued was delivered. It returns the workflow's result as JSON
// (null for undefined), or a *ScriptError.
func (v *VM) Run(ctx context.Context) (json.RawMessage, error) {
	// The guard interrupts from its own goroutine: without this check a run whose ctx is already
	// done could start, and even finish, before the interrupt lands.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g := v.guard(ctx, 0, nil)
	defer g.release()

	var result goja.Value
	called, returned := false, false
	v.loop.SetAfter(func() {
		// The calls still under way when the entry function's promise settles are late: their
		// results reach no one. Seen after each callback, as the script saw it.
		if !called || returned {
			return
		}
		if p, ok := asPromise(result); ok && p.State() == goja.PromiseStatePending {
			return
		}
		returned = true
		if r, ok := v.cfg.Host.(Returner); ok {
			r.Returned()
		}
	})
	err := v.loop.Start(g.ctx, func() error {
		in, err := v.in.Parse(v.cfg.Input)
		if err != nil {
			return err
		}
		out, err := v.main(goja.Undefined(), in)
		if err != nil {
			return err
		}
		result, called = out, true
		if p, ok := asPromise(out); ok {
			v.mu.Lock()
			v.result = p
			v.mu.Unlock()
		}
		return v.checkUnhandled()
	})
	if err == nil {
		err = v.checkUnhandled()
	}
	if le := g.limit(); le != nil {
		return nil, limitScriptError(le)
	}
	if err != nil {
		return nil, v.scriptError(err)
	}
	if p, ok := asPromise(result); ok {
		switch p.State() {
		case goja.PromiseStateFulfilled:
			result = p.Result()
		case goja.PromiseStateRejected:
			return nil, v.thrown(p.Result())
		default:
			return nil, &ScriptError{Message: NeverSettled, Code: string(errs.InvalidRequest), Reason: ReasonNondeterministic}
		}
	}
	if result == nil || goja.IsUndefined(result) {
		return json.RawMessage("null"), nil
	}
	// The script's getters and toJSON run here, under the same interrupts as the script.
	out, err := v.in.JSON(result, jsutil.CallsScript, 0)
	if le := g.limit(); le != nil {
		return nil, limitScriptError(le)
	}
	if err != nil {
		var je *jsutil.JSONError
		if errors.As(err, &je) {
			return nil, &ScriptError{Message: "TypeError: the workflow's result is not JSON: " + je.Error()}
		}
		return nil, v.scriptError(err)
	}
	if out == nil {
		return json.RawMessage("null"), nil
	}
	return out, nil
}

var promiseType = reflect.TypeOf((*goja.Promise)(nil))

// asPromise tells a Promise from any other value without Export, which would run the getters
// of whatever the script returned.
func asPromise(v goja.Value) (*goja.Promise, bool) {
	o, ok := v.(*goja.Object)
	if !ok || jsutil.IsProxy(o) || o.ExportType() != promiseType {
		return nil, false
	}
	p, ok := o.Export().(*goja.Promise)
	return p, ok
}

// Pending reports calls issued but not delivered: after Run fails, the engine waits for them.
func (v *VM) Pending() int {
	r, q := v.loop.Pending()
	return r + q
}

func (v *VM) trackRejection(p *goja.Promise, op goja.PromiseRejectionOperation) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch op {
	case goja.PromiseRejectionReject:
		v.unhandled = append(v.unhandled, p)
	case goja.PromiseRejectionHandle:
		for i, q := range v.unhandled {
			if q == p {
				v.unhandled = append(v.unhandled[:i], v.unhandled[i+1:]...)
				break
			}
		}
	}
}

// checkUnhandled fails the run on a rejection nobody handled, as Node does.
func (v *VM) checkUnhandled() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	var p *goja.Promise
	for _, q := range v.unhandled {
		if q != v.result {
			p = q
			break
		}
	}
	if p == nil {
		return nil
	}
	v.unhandled = nil
	se := v.thrown(p.Result())
	se.Message = "uncaught (in promise): " + se.Message
	return se
}

func (v *VM) scriptError(err error) error {
	var se *ScriptError
	if errors.As(err, &se) {
		return se
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		out := v.thrown(ex.Value())
		if out.Stack == "" {
			out.Stack = loader.FormatStack(ex)
		}
		return out
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return limitScriptError(v.stackLimit())
	}
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if cause, ok := ie.Value().(error); ok {
			return cause
		}
	}
	return err
}

// stackLimit is a call stack deeper than the limit. goja unwinds the whole script for it: a
// script cannot catch it.
func (v *VM) stackLimit() *LimitError {
	return &LimitError{Reason: ReasonStackDepth, Message: fmt.Sprintf(
		"RangeError: Maximum call stack size exceeded: the workflow's call stack passed its limit of %d calls (--max-stack-depth)", v.limits.StackDepth)}
}

// thrown describes a thrown JS value without running any of its code: an Error's message, code
// and stack, or the value itself.
func (v *VM) thrown(val goja.Value) *ScriptError {
	t := v.in.Thrown(val)
	return &ScriptError{Message: t.Message, Code: t.Code, Reason: t.Reason, Stack: cleanStack(t.Stack)}
}

// stackFrame matches a frame of goja's stack property: "at fn (file:line:col(pc))".
var stackFrame = regexp.MustCompile(`^(\s*at .*?)\(?([^()\s]+):(\d+):(\d+)\(\d+\)\)?$`)

// cleanStack turns goja's stack property into frames a person reads: the first line (the
// message) is dropped, file names are unescaped and the bytecode offsets go.
func cleanStack(stack string) string {
	lines := strings.Split(strings.TrimRight(stack, "\n"), "\n")
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "at ") {
			continue
		}
		if m := stackFrame.FindStringSubmatch(t); m != nil {
			file := m[2]
			if u, err := url.PathUnescape(file); err == nil {
				file = u
			}
			t = fmt.Sprintf("%s(%s:%s:%s)", m[1], file, m[3], m[4])
		}
		out = append(out, t)
	}
	return strings.Join(out, "\n")
}
