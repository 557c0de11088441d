// Package crw is the `crw` module: the run's input and the deterministic services a workflow
// may use (log, now, random), plus commit, tierStep, decide and effect.
package crw

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dop251/goja"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/runtime/jsutil"
)

// Host gives the module what only the run knows. Every method is called on the loop goroutine.
type Host interface {
	// Now is the run's clock: the same value on a replay of the same journal.
	Now() time.Time
	// Random is a uniform float in [0, 1) from the run's seeded stream.
	Random() float64
	// Log records a line from the script.
	Log(level, message string)
	// TierStep moves a node's executor calls up one tier; evidence is the callId of the
	// CallResult the script gave as its reason. It returns what the step recorded, as JSON;
	// the error is thrown at the call site.
	TierStep(node, evidence string) (json.RawMessage, error)
	// Commit commits the pending tree of the node's worktree; it returns the commit, as JSON.
	// The error is thrown at the call site.
	Commit(node, message string) (json.RawMessage, error)
	// Decide asks the run's owner a question. settle is called once, from any goroutine, with
	// the answer (JSON) or the error the promise rejects with. An error from Decide itself is
	// thrown at the call site.
	Decide(d Decision, settle func(json.RawMessage, error)) error
	// Effect waits for the operator's verdict on a call whose outcome is unknown (crw flow
	// recover). settle is called once, from any goroutine, with the verdict (JSON) or the
	// error the promise rejects with. An error from Effect itself is thrown at the call site.
	Effect(call string, settle func(json.RawMessage, error)) error
}

// Decision is what crw.decide asks: an id unique in the run, the question, and the JSON
// Schema its answer must satisfy.
type Decision struct {
	ID       string
	Question string
	Schema   json.RawMessage
}

// Loop is what the module needs of the event loop: a callback announced now, enqueued later.
type Loop interface {
	Reserve() (enqueue func(func() error))
}

// Loader returns the module loader for `crw`, bound to the run's input (JSON) and its host.
// in are the runtime's intrinsics, taken before the script ran: a module that replaced
// JSON.parse before crw was imported changes nothing of the input.
func Loader(input json.RawMessage, in *jsutil.Intrinsics, loop Loop, host Host) func(rt *goja.Runtime, module *goja.Object) {
	return func(rt *goja.Runtime, module *goja.Object) {
		freeze := in.DeepFreeze
		inputVal, err := in.Parse(input)
		if err != nil {
			panic(err)
		}
		// What the run recorded reaches the script deeply frozen, read as an agent.call's output
		// is: a number past float64's range reads Infinity, never a Go error.
		parse := jsutil.FrozenParser(in)
		frozen := func(raw json.RawMessage) goja.Value {
			v, err := parse(raw)
			if err != nil {
				panic(jsutil.NewError(rt, errs.IncompatibleSchema, "", "crw: the recorded value cannot be given to the workflow: "+err.Error()))
			}
			return v
		}
		obj := rt.NewObject()
		_ = obj.Set("input", freeze(inputVal))
		_ = obj.Set("now", jsutil.Func(rt, "now", func() int64 { return host.Now().UnixMilli() }))
		_ = obj.Set("random", jsutil.Func(rt, "random", host.Random))
		_ = obj.Set("log", jsutil.Func(rt, "log", func(fc goja.FunctionCall) goja.Value {
			host.Log("info", joinArgs(in, fc.Arguments))
			return goja.Undefined()
		}))
		_ = obj.Set("tierStep", jsutil.Func(rt, "tierStep", func(fc goja.FunctionCall) goja.Value {
			node := nodeArg(rt, "crw.tierStep", fc.Argument(0))
			evidence := evidenceArg(rt, in, node, fc.Argument(1))
			res, err := host.TierStep(node, evidence)
			if err != nil {
				throw(rt, err)
			}
			return frozen(res)
		}))
		_ = obj.Set("commit", jsutil.Func(rt, "commit", func(fc goja.FunctionCall) goja.Value {
			node := nodeArg(rt, "crw.commit", fc.Argument(0))
			msg := messageArg(rt, in, fc.Argument(1))
			res, err := host.Commit(node, msg)
			if err != nil {
				throw(rt, err)
			}
			p, resolve, _ := rt.NewGoPromise()
			_ = resolve(frozen(res))
			return rt.ToValue(p)
		}))
		// awaited is a promise of what the host settles later, from any goroutine; an error
		// from ask itself is thrown at the call site.
		awaited := func(ask func(settle func(json.RawMessage, error)) error) goja.Value {
			p, resolve, reject := rt.NewGoPromise()
			enqueue := loop.Reserve()
			err := ask(func(value json.RawMessage, err error) {
				enqueue(func() error {
					if err != nil {
						return reject(errorValue(rt, err))
					}
					v, perr := parse(value)
					if perr != nil {
						return reject(errorValue(rt, errs.New(errs.IncompatibleSchema, "crw: the recorded value cannot be given to the workflow: %v", perr)))
					}
					return resolve(v)
				})
			})
			if err != nil {
				enqueue(func() error { return nil })
				throw(rt, err)
			}
			return rt.ToValue(p)
		}
		_ = obj.Set("decide", jsutil.Func(rt, "decide", func(fc goja.FunctionCall) goja.Value {
			d := decisionArg(rt, in, fc.Argument(0))
			return awaited(func(settle func(json.RawMessage, error)) error { return host.Decide(d, settle) })
		}))
		_ = obj.Set("effect", jsutil.Func(rt, "effect", func(fc goja.FunctionCall) goja.Value {
			call := callArg(rt, in, fc.Argument(0))
			return awaited(func(settle func(json.RawMessage, error)) error { return host.Effect(call, settle) })
		}))
		// Every module of the workflow shares this object: none may replace what it holds.
		module.Set("exports", freeze(obj))
	}
}

// MaxMessage bounds a commit message; MaxQuestion a decision's question.
const (
	MaxMessage  = 64 << 10
	MaxQuestion = 64 << 10
	MaxSchema   = 1 << 20
	maxNode     = 256
)

func nodeArg(rt *goja.Runtime, fn string, v goja.Value) string {
	s, ok := v.(goja.String)
	if !ok {
		panic(jsutil.NewError(rt, errs.InvalidRequest, "", fmt.Sprintf("%s: the first argument is the node, a string; got %s", fn, jsutil.TypeName(v))))
	}
	if s.Length() == 0 {
		panic(jsutil.NewError(rt, errs.InvalidRequest, "", fn+": the node is empty"))
	}
	node := s.String()
	if len(node) > maxNode {
		panic(jsutil.NewError(rt, errs.InvalidRequest, "", fmt.Sprintf("%s: the node is %d bytes long; the limit is %d", fn, len(node), maxNode)))
	}
	if problem := jsutil.SurrogateProblem(s, node); problem != "" {
		panic(jsutil.NewError(rt, errs.InvalidRequest, "", fmt.Sprintf("%s: the node %s", fn, problem)))
	}
	return node
}

// messageArg reads crw.commit's options, {message}; a bare string is taken as the message.
func messageArg(rt *goja.Runtime, in *jsutil.Intrinsics, v goja.Value) string {
	fail := func(format string, args ...any) {
		panic(jsutil.NewError(rt, errs.InvalidRequest, "", "crw.commit: "+fmt.Sprintf(format, args...)))
	}
	var msg goja.Value
	switch x := v.(type) {
	case goja.String:
		msg = x
	case *goja.Object:
		if jsutil.IsProxy(x) {
			fail("the options must be a plain object, got a Proxy")
		}
		for _, k := range x.Keys() {
			if k != "message" {
				fail("unknown option %q (crw.commit takes {message})", k)
			}
		}
		p, err := in.Data(x, "message")
		if err != nil {
			fail("option \"message\" cannot be read: %v", err)
		}
		msg = p.Value
	default:
		if v == nil || goja.IsUndefined(v) {
			fail("the second argument is {message}: what the commit says")
		}
		fail("the second argument is {message}, got %s", jsutil.TypeName(v))
	}
	s, ok := msg.(goja.String)
	if !ok || strings.TrimSpace(s.String()) == "" {
		fail("message must be a non-empty string")
	}
	text := s.String()
	if len(text) > MaxMessage {
		fail("message is %d bytes long; the limit is %d", len(text), MaxMessage)
	}
	if problem := jsutil.SurrogateProblem(s, text); problem != "" {
		fail("message %s", problem)
	}
	if i := strings.IndexByte(text, 0); i >= 0 {
		fail("message holds a NUL byte at byte %d, which no commit message may", i)
	}
	return text
}

// evidenceArg reads the CallResult a tier step gives as its evidence: its callId, which the
// host checks against the journal (the object itself could be forged).
func evidenceArg(rt *goja.Runtime, in *jsutil.Intrinsics, node string, v goja.Value) string {
	o, ok := v.(*goja.Object)
	if ok && !jsutil.IsProxy(o) {
		if p, err := in.Data(o, "callId"); err == nil {
			if s, ok := p.Value.(goja.String); ok && s.Length() > 0 && s.Length() <= maxNode {
				return s.String()
			}
		}
	}
	panic(jsutil.NewError(rt, errs.InvalidRequest, "", fmt.Sprintf(
		"crw.tierStep: the second argument is the evidence: the null_model CallResult of an executor call of node %q; got %s", node, jsutil.TypeName(v))))
}

// callArg reads crw.effect's argument: a CallResult, or its callId. The host checks the id
// against the calls the script was given.
func callArg(rt *goja.Runtime, in *jsutil.Intrinsics, v goja.Value) string {
	if o, ok := v.(*goja.Object); ok && !jsutil.IsProxy(o) {
		if p, err := in.Data(o, "callId"); err == nil {
			v = p.Value
		}
	}
	if s, ok := v.(goja.String); ok && s.Length() > 0 && s.Length() <= maxNode {
		return s.String()
	}
	panic(jsutil.NewError(rt, errs.InvalidRequest, "", fmt.Sprintf(
		"crw.effect: the argument is the CallResult of a call that ended unknown, or its callId; got %s", jsutil.TypeName(v))))
}

// decisionArg reads crw.decide's {id, question, schema}.
func decisionArg(rt *goja.Runtime, in *jsutil.Intrinsics, v goja.Value) Decision {
	fail := func(format string, args ...any) {
		panic(jsutil.NewError(rt, errs.InvalidRequest, "", "crw.decide: "+fmt.Sprintf(format, args...)))
	}
	o, ok := v.(*goja.Object)
	if !ok || jsutil.IsProxy(o) || o.ClassName() != "Object" {
		fail("takes {id, question, schema}, got %s", jsutil.TypeName(v))
	}
	for _, k := range o.Keys() {
		if k != "id" && k != "question" && k != "schema" {
			fail("unknown option %q (crw.decide takes id, question, schema)", k)
		}
	}
	str := func(name string, limit int) string {
		p, err := in.Data(o, name)
		if err != nil {
			fail("option %q cannot be read: %v", name, err)
		}
		s, ok := p.Value.(goja.String)
		if !ok || strings.TrimSpace(s.String()) == "" {
			fail("%s must be a non-empty string", name)
		}
		if len(s.String()) > limit {
			fail("%s is %d bytes long; the limit is %d", name, len(s.String()), limit)
		}
		if problem := jsutil.SurrogateProblem(s, s.String()); problem != "" {
			fail("%s %s", name, problem)
		}
		return s.String()
	}
	d := Decision{ID: str("id", maxNode), Question: str("question", MaxQuestion)}
	for i, r := range d.ID {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/", r)) {
			fail("id %q holds %q at byte %d: an id is letters, digits and - _ . : /", d.ID, r, i)
		}
	}
	p, err := in.Data(o, "schema")
	if err != nil {
		fail("option \"schema\" cannot be read: %v", err)
	}
	so, ok := p.Value.(*goja.Object)
	if !ok || jsutil.IsProxy(so) || so.ClassName() != "Object" {
		fail("schema must be a JSON Schema object, got %s", jsutil.TypeName(p.Value))
	}
	raw, err := in.JSON(so, jsutil.DataOnly, MaxSchema)
	if err != nil {
		fail("schema cannot be serialized: %v", err)
	}
	d.Schema = raw
	return d
}

// Console returns a console object whose output goes to the host's log.
func Console(rt *goja.Runtime, in *jsutil.Intrinsics, host Host) *goja.Object {
	c := rt.NewObject()
	for _, level := range []string{"log", "info", "warn", "error", "debug"} {
		level := level
		_ = c.Set(level, jsutil.Func(rt, level, func(fc goja.FunctionCall) goja.Value {
			host.Log(level, joinArgs(in, fc.Arguments))
			return goja.Undefined()
		}))
	}
	return c
}

// maxLogArg bounds what one argument of a log line may take.
const maxLogArg = 64 << 10

// joinArgs prints a log line's arguments running none of the script's code (no getter, toJSON,
// toString or Proxy trap): a string as it is, an Error as its message, other objects as JSON of
// their data.
func joinArgs(in *jsutil.Intrinsics, args []goja.Value) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = logArg(in, a)
	}
	return strings.Join(parts, " ")
}

func logArg(in *jsutil.Intrinsics, a goja.Value) string {
	if _, sym := a.(*goja.Symbol); sym {
		return jsutil.PrimitiveText(a)
	}
	if s, ok := a.(goja.String); ok {
		if s.Length() > maxLogArg {
			return s.Substring(0, maxLogArg).String() + "…"
		}
		return s.String()
	}
	o, ok := a.(*goja.Object)
	if !ok {
		return jsutil.PrimitiveText(a)
	}
	if jsutil.IsProxy(o) {
		return "[Proxy]"
	}
	if _, fn := goja.AssertFunction(o); fn {
		return "[function]"
	}
	if o.ClassName() == "Error" {
		return in.Thrown(o).String
	}
	b, err := in.JSON(o, jsutil.DataOnly, maxLogArg)
	if err != nil {
		return "[object: " + err.Error() + "]"
	}
	return string(b)
}

func throw(rt *goja.Runtime, err error) { jsutil.ThrowError(rt, "", err) }

// errorValue is err as the JS Error a promise rejects with: its code and reason when it has
// them, else invalid_request.
func errorValue(rt *goja.Runtime, err error) *goja.Object {
	code, reason := errs.InvalidRequest, ""
	if c, ok := err.(errs.Coded); ok {
		code, reason = c.Code(), c.Reason()
	}
	return jsutil.NewError(rt, code, reason, err.Error())
}
