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
func Loader(input json.RawMessage, host Host) func(rt *goja.Runtime, module *goja.Object) {
	return func(rt *goja.Runtime, module *goja.Object) {
		freeze := jsutil.DeepFreezer(rt)
		in, err := jsutil.FromJSON(rt, input)
		if err != nil {
			panic(err)
		}
		obj := rt.NewObject()
		_ = obj.Set("input", freeze(in))
		_ = obj.Set("now", jsutil.Func(rt, "now", func() int64 { return host.Now().UnixMilli() }))
		_ = obj.Set("random", jsutil.Func(rt, "random", host.Random))
		_ = obj.Set("log", jsutil.Func(rt, "log", func(fc goja.FunctionCall) goja.Value {
			host.Log("info", joinArgs(fc.Arguments))
			return goja.Undefined()
		}))
		_ = obj.Set("tierStep", jsutil.Func(rt, "tierStep", func(node string) {
			if err := host.TierStep(node); err != nil {
				throw(rt, err)
			}
		}))
		_ = obj.Set("commit", jsutil.Func(rt, "commit", func(fc goja.FunctionCall) goja.Value {
			node := fc.Argument(0).String()
			msg := ""
			if len(fc.Arguments) > 1 {
				msg = fc.Argument(1).String()
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
func Console(rt *goja.Runtime, host Host) *goja.Object {
	c := rt.NewObject()
	for _, level := range []string{"log", "info", "warn", "error", "debug"} {
		level := level
		_ = c.Set(level, jsutil.Func(rt, level, func(fc goja.FunctionCall) goja.Value {
			host.Log(level, joinArgs(fc.Arguments))
			return goja.Undefined()
		}))
	}
	return c
}

func joinArgs(args []goja.Value) string {
	parts := make([]string, len(args))
	for i, a := range args {
		if o, ok := a.(*goja.Object); ok && o.ClassName() != "Function" && o.ClassName() != "Error" {
			if b, err := json.Marshal(o.Export()); err == nil {
				parts[i] = string(b)
				continue
			}
		}
		parts[i] = a.String()
	}
	return strings.Join(parts, " ")
}

func throw(rt *goja.Runtime, err error) { jsutil.ThrowError(rt, "", err) }
