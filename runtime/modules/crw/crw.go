// Package crw is the `crw` module: the run's input and the deterministic services a workflow
// may use (log, now, random), plus commit and tierStep.
package crw

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/dop251/goja"

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
	// TierStep asks for the next tier of a node; the error is thrown at the call site.
	TierStep(node string) error
	// Commit records the node's work; the error is thrown at the call site.
	Commit(node, message string) error
}

// Loader returns the module loader for `crw`, bound to the run's input (JSON) and its host.
// in are the runtime's intrinsics, taken before the script ran: a module that replaced
// JSON.parse before crw was imported changes nothing of the input.
func Loader(input json.RawMessage, in *jsutil.Intrinsics, host Host) func(rt *goja.Runtime, module *goja.Object) {
	return func(rt *goja.Runtime, module *goja.Object) {
		freeze := in.DeepFreeze
		inputVal, err := in.Parse(input)
		if err != nil {
			panic(err)
		}
		obj := rt.NewObject()
		_ = obj.Set("input", freeze(inputVal))
		_ = obj.Set("now", jsutil.Func(rt, "now", func() int64 { return host.Now().UnixMilli() }))
		_ = obj.Set("random", jsutil.Func(rt, "random", host.Random))
		_ = obj.Set("log", jsutil.Func(rt, "log", func(fc goja.FunctionCall) goja.Value {
			host.Log("info", joinArgs(in, fc.Arguments))
			return goja.Undefined()
		}))
		_ = obj.Set("tierStep", jsutil.Func(rt, "tierStep", func(node string) {
			if err := host.TierStep(node); err != nil {
				throw(rt, err)
			}
		}))
		_ = obj.Set("commit", jsutil.Func(rt, "commit", func(fc goja.FunctionCall) goja.Value {
			node := logArg(in, fc.Argument(0))
			msg := ""
			if len(fc.Arguments) > 1 {
				msg = logArg(in, fc.Argument(1))
			}
			if err := host.Commit(node, msg); err != nil {
				throw(rt, err)
			}
			return goja.Undefined()
		}))
		// Every module of the workflow shares this object: none may replace what it holds.
		module.Set("exports", freeze(obj))
	}
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
