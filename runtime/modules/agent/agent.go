// Package agent is the `crw:agent` module: agent.call issues one model call and returns a
// Promise of its frozen CallResult.
package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/dop251/goja"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/runtime/eventloop"
	"github.com/crw-dev/crw/runtime/jsutil"
)

// CodeInvalidRequest is the code of every error agent.call throws for a malformed request.
const CodeInvalidRequest = errs.InvalidRequest

// Roles are the roles a call may name.
var Roles = []string{"architect", "executor", "executor-t1", "reviewer", "explorer", "critic"}

// Efforts are the reasoning efforts a call may request.
var Efforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// Request is one call as the script issued it.
type Request struct {
	Role   string
	Prompt string
	Schema json.RawMessage // nil: the answer is text
	Node   string
	Model  string
	Effort string
	Resume string
	Site   string // file:line:col of the agent.call in the script
}

// Caller runs calls for the module. Call is invoked on the loop goroutine in the order the
// script issues calls; it must not block. The caller calls settle exactly once, from any
// goroutine, with the CallResult; results reach the script in the order settle is called. An
// error from Call is thrown at the call site (an errs.Coded sets its code and reason), and
// settle is then never called.
type Caller interface {
	Call(req Request, settle Settle) error
}

// Settle delivers a call's CallResult. onLoop, when not nil, runs on the loop goroutine right
// before the script sees the result: the run advances its clock there. What onLoop returns,
// when not nil, runs once the script has taken the result: after the code that awaited it ran
// to its next await (the promise's reactions run as the result is given).
type Settle func(result Result, onLoop func() (after func()))

// Result is a call's CallResult as a host gives it (call-result.md). The module builds the
// deeply frozen object the script sees from it directly, its members in this order: only
// Output is JSON text, and Meta is made JSON (encoding/json) when the script first reads
// result.meta, which most scripts seldom do; building it is most of a replayed call's work.
type Result struct {
	CallID string
	Handle *string // nil: null
	Status string
	Output json.RawMessage // nil: null
	Reason *string         // nil: null
	Meta   any             // nil: null
}

type agentModule struct {
	rt          *goja.Runtime
	in          *jsutil.Intrinsics
	loop        *eventloop.Loop
	caller      Caller
	freeze      func(goja.Value) goja.Value
	parseFrozen func([]byte) (goja.Value, error) // JSON to a deeply frozen value
	// schemas keeps the JSON of the schema objects calls were given: a workflow passes the same
	// few to thousands of calls (the exports of crw:lib/schemas modules, frozen once checked,
	// or its own constants).
	schemas *jsutil.Memo
	present []string // the own enumerable keys of the options being read (loop goroutine only)
	reading bool     // a call's options are being read (readRequest; loop goroutine only)
	tracker *Tracker
	meta    *goja.LazyGetter // the getter of every result's meta
	// sites caches each call site's text by its stack frame (a program and a place in it): a
	// loop of calls asks for the same few, and a frame's position costs a source map lookup.
	sites map[goja.StackFrame]string
	stack []goja.StackFrame // reused by callSite
}

// maxSites bounds the call sites kept: a script has as many as it has agent.call expressions.
const maxSites = 4096

// Loader returns the module loader for `crw:agent` bound to one runtime and its loop; in are
// the runtime's intrinsics, taken before the script ran, that options are read with. tracker,
// when not nil, follows the promises the calls return.
func Loader(loop *eventloop.Loop, in *jsutil.Intrinsics, caller Caller, tracker *Tracker) func(rt *goja.Runtime, module *goja.Object) {
	return func(rt *goja.Runtime, module *goja.Object) {
		m := &agentModule{rt: rt, in: in, loop: loop, caller: caller, tracker: tracker, freeze: in.DeepFreeze, parseFrozen: jsutil.FrozenParser(in), schemas: in.NewMemo(maxSchemas, MaxSchemaBytes), meta: rt.NewLazyGetter("meta")}
		agentObj := rt.NewObject()
		_ = agentObj.Set("call", jsutil.Func(rt, "call", m.call))
		// A JS copy: rt.ToValue(Roles) would let a script write through to the Go slice.
		roles := make([]any, len(Roles))
		for i, r := range Roles {
			roles[i] = r
		}
		_ = agentObj.Set("roles", m.freeze(rt.NewArray(roles...)))
		exports := module.Get("exports").ToObject(rt)
		// Marks the exports as an ES module's, so `import agent from "crw:agent"` is the default
		// export below rather than the whole exports object (esbuild's interop).
		_ = exports.DefineDataProperty("__esModule", rt.ToValue(true), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
		_ = exports.Set("agent", agentObj)
		_ = exports.Set("default", agentObj)
		// schema is for tsc, which types its argument by the answers it admits (crw-types'
		// agent.d.ts); at run time it is the argument, which agent.call checks where it is used.
		_ = exports.Set("schema", jsutil.Func(rt, "schema", func(c goja.FunctionCall) goja.Value { return c.Argument(0) }))
		m.freeze(exports) // shared by every module of the workflow: none may replace agent.call
	}
}

// Options are the options agent.call takes.
var Options = []string{"role", "prompt", "schema", "node", "model", "effort", "resume"}

var allowed = func() map[string]bool {
	m := map[string]bool{}
	for _, o := range Options {
		m[o] = true
	}
	return m
}()

func (m *agentModule) call(fc goja.FunctionCall) goja.Value {
	rt := m.rt
	req := m.readRequest(fc.Argument(0))
	req.Site = m.callSite()

	promise, resolve, _ := rt.NewGoPromise()
	enqueue := m.loop.Reserve()
	settle := func(result Result, onLoop func() (after func())) {
		enqueue(func() error {
			if onLoop != nil {
				if after := onLoop(); after != nil {
					defer after()
				}
			}
			v, err := m.resultValue(result, req.Site)
			if err != nil {
				// The host's failure, not an exception of the script. The parser's words are
				// left out: they quote the answer (a member's name), which no error carries.
				return fmt.Errorf("agent.call: the result of %s could not be given to the script", req.Site)
			}
			return resolve(v)
		})
	}
	if err := m.caller.Call(req, settle); err != nil {
		enqueue(func() error { return nil }) // a refused request is never settled: release its reservation
		jsutil.ThrowError(rt, "agent.call: ", err)
	}
	m.tracker.add(promise)
	return rt.ToValue(promise)
}

// resultValue builds the deeply frozen CallResult object of r: its members non-writable and
// non-configurable, meta a non-configurable getter that builds its value once.
func (m *agentModule) resultValue(r Result, site string) (goja.Value, error) {
	rt := m.rt
	output := goja.Null()
	if r.Output != nil {
		v, err := m.parseFrozen(r.Output)
		if err != nil {
			return nil, err
		}
		output = v
	}
	values := [...]goja.Value{rt.ToValue(r.CallID), m.orNull(r.Handle), rt.ToValue(r.Status), output, m.orNull(r.Reason)}
	return rt.NewFrozenRecord(resultNames[:], values[:], m.meta, m.metaMaker(r.Meta, site)), nil
}

// resultNames are a result's data properties, in order; its meta comes after them.
var resultNames = [...]string{"callId", "handle", "status", "output", "reason"}

func (m *agentModule) orNull(s *string) goja.Value {
	if s == nil {
		return goja.Null()
	}
	return m.rt.ToValue(*s)
}

// metaMaker makes a result's meta on its first read, deeply frozen (the same value on every
// read after). A meta that cannot be built (no host's can) throws at the read; the words of the
// failure are left out, as for a result.
func (m *agentModule) metaMaker(meta any, site string) func() goja.Value {
	return func() goja.Value {
		v, err := m.metaValue(meta)
		if err != nil {
			panic(m.rt.NewGoError(fmt.Errorf("agent.call: the meta of the result of %s could not be given to the script", site)))
		}
		return v
	}
}

func (m *agentModule) metaValue(meta any) (goja.Value, error) {
	if meta == nil {
		return goja.Null(), nil
	}
	data, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	return m.parseFrozen(data)
}

// readRequest reads a call's options (parse). A getter of the script's may run as they are
// read (the schema memo's check, jsutil.Memo, reads a member a script turned into one after a
// first read with a plain get); one that calls agent.call is refused there: each such call
// would read the options again, and a chain of them to the stack's limit took time quadratic
// in its depth (seconds at the default depth) to fail.
func (m *agentModule) readRequest(arg goja.Value) Request {
	if m.reading {
		jsutil.Throw(m.rt, CodeInvalidRequest, "agent.call: called while another agent.call's options were being read (from a getter in them): give values, not getters")
	}
	m.reading = true
	defer func() { m.reading = false }()
	return m.parse(arg)
}

func (m *agentModule) parse(arg goja.Value) Request {
	rt := m.rt
	if arg == nil || goja.IsUndefined(arg) || goja.IsNull(arg) {
		jsutil.Throw(rt, CodeInvalidRequest, "agent.call: options are required: {role, prompt, ...}")
	}
	obj, ok := arg.(*goja.Object)
	if ok && jsutil.IsProxy(obj) {
		jsutil.Throw(rt, CodeInvalidRequest, "agent.call: options must be a plain object, got a Proxy")
	}
	if !ok || obj.ClassName() != "Object" {
		jsutil.Throw(rt, CodeInvalidRequest, "agent.call: options must be an object, got %s", jsutil.TypeName(arg))
	}
	var unknown []string
	m.present = obj.AppendKeys(m.present[:0])
	for _, k := range m.present {
		if !allowed[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		jsutil.Throw(rt, CodeInvalidRequest, "agent.call: unknown option %q (allowed: role, prompt, schema, node, model, effort, resume)", unknown[0])
	}
	var req Request
	req.Role = m.str(obj, "role", true)
	if !contains(Roles, req.Role) {
		jsutil.Throw(rt, CodeInvalidRequest, "agent.call: role %q is not one of %s", req.Role, strings.Join(Roles, ", "))
	}
	req.Prompt = m.str(obj, "prompt", true)
	if strings.TrimSpace(req.Prompt) == "" {
		jsutil.Throw(rt, CodeInvalidRequest, "agent.call: prompt is empty")
	}
	req.Node = m.str(obj, "node", false)
	if req.Node == "" {
		req.Node = req.Role
	}
	req.Model = m.str(obj, "model", false)
	for _, f := range []struct{ name, val string }{{"node", req.Node}, {"model", req.Model}} {
		if err := labelProblem(f.val); err != "" {
			jsutil.Throw(rt, CodeInvalidRequest, "agent.call: %s %s", f.name, err)
		}
	}
	req.Effort = m.str(obj, "effort", false)
	if req.Effort != "" && !contains(Efforts, req.Effort) {
		jsutil.Throw(rt, CodeInvalidRequest, "agent.call: effort %q is not one of %s", req.Effort, strings.Join(Efforts, ", "))
	}
	req.Resume = m.str(obj, "resume", false)
	if v := m.option(obj, "schema"); v != nil && !goja.IsUndefined(v) && !goja.IsNull(v) {
		so, ok := v.(*goja.Object)
		if ok && jsutil.IsProxy(so) {
			jsutil.Throw(rt, CodeInvalidRequest, "agent.call: schema must be a JSON Schema object, got a Proxy")
		}
		if !ok || so.ClassName() != "Object" {
			jsutil.Throw(rt, CodeInvalidRequest, "agent.call: schema must be a JSON Schema object, got %s", jsutil.TypeName(v))
		}
		req.Schema = m.schemaJSON(so)
	}
	return req
}

// MaxSchemaBytes bounds a schema's JSON.
const MaxSchemaBytes = 4 << 20

// maxSchemas bounds the schema objects whose JSON is kept.
const maxSchemas = 256

// schemaJSON serializes a schema object with crw's own walk: the script's JSON.stringify,
// Object.keys, toJSON and getters play no part. A schema object given before is read again
// only as far as it takes to see it has not changed (jsutil.Memo).
func (m *agentModule) schemaJSON(so *goja.Object) json.RawMessage {
	raw, err := m.schemas.JSON(so)
	if err != nil {
		jsutil.Throw(m.rt, CodeInvalidRequest, "agent.call: schema cannot be serialized: %s", strings.Replace(err.Error(), "$", "schema", 1))
	}
	return raw
}

// option reads an option as an own data property: what Object.prototype holds is no option,
// and a getter is refused rather than run (it could change between two reads).
//
// Options are own enumerable properties: a name Keys did not list is absent, which spares
// reading a descriptor for each option a call leaves out.
func (m *agentModule) option(obj *goja.Object, name string) goja.Value {
	if !slices.Contains(m.present, name) {
		return nil
	}
	p, err := m.in.Own(obj, name)
	if err != nil {
		jsutil.Throw(m.rt, CodeInvalidRequest, "agent.call: option %q cannot be read: %v", name, err)
	}
	if p.Accessor {
		jsutil.Throw(m.rt, CodeInvalidRequest, "agent.call: option %q is a getter: give the value itself", name)
	}
	return p.Value
}

func (m *agentModule) str(obj *goja.Object, name string, required bool) string {
	v := m.option(obj, name)
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		if required {
			jsutil.Throw(m.rt, CodeInvalidRequest, "agent.call: option %q is required", name)
		}
		return ""
	}
	str, ok := v.(goja.String) // a primitive string: Export of an object would run its getters
	if _, sym := v.(*goja.Symbol); sym || !ok {
		jsutil.Throw(m.rt, CodeInvalidRequest, "agent.call: option %q must be a string, got %s", name, jsutil.TypeName(v))
	}
	text := str.String()
	if problem := jsutil.SurrogateProblem(str, text); problem != "" {
		jsutil.Throw(m.rt, CodeInvalidRequest, "agent.call: option %q %s", name, problem)
	}
	return text
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// callSite is the script position of the innermost JS frame: the agent.call's caller.
func (m *agentModule) callSite() string {
	m.stack = m.rt.CaptureCallStack(3, m.stack[:0])
	for _, f := range m.stack {
		if site, ok := m.sites[f]; ok {
			return site
		}
		p := f.Position()
		if p.Filename == "" || p.Line == 0 {
			continue
		}
		site := fmt.Sprintf("%s:%d:%d", jsutil.FileName(p.Filename), p.Line, p.Column)
		if m.sites == nil || len(m.sites) >= maxSites {
			m.sites = map[goja.StackFrame]string{}
		}
		m.sites[f] = site
		return site
	}
	return ""
}

// maxLabel bounds a node or model name: they are labels, shown on one line of progress,
// show and trace.
const maxLabel = 256

// labelProblem says what is wrong with a node or model name, or "": too long, or holding a
// control character or a bidirectional override, which would reach a terminal as written.
func labelProblem(s string) string {
	if len(s) > maxLabel {
		return fmt.Sprintf("is %d bytes long; the limit is %d", len(s), maxLabel)
	}
	for i, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return fmt.Sprintf("holds the character %U at byte %d: names may not hold control or bidirectional characters", r, i)
		}
	}
	return ""
}
