package jsutil

import (
	"reflect"

	"github.com/dop251/goja"
)

// handledField is goja's record that a promise has had a reaction added, by await, then,
// Promise.all or any other way, before or after it settled: what no script can reach or
// replace. goja keeps it unexported; go.mod pins the goja whose Promise has it, and
// TestPromiseHandled fails on one that does not.
var handledField = func() int {
	f, ok := reflect.TypeOf(goja.Promise{}).FieldByName("handled")
	if !ok || f.Type.Kind() != reflect.Bool {
		return -1
	}
	return f.Index[0]
}()

// PromiseHandled reports whether the script attached a reaction to p (awaited it, or called its
// then); known is false when this goja does not say.
func PromiseHandled(p *goja.Promise) (handled, known bool) {
	if p == nil || handledField < 0 {
		return false, false
	}
	return reflect.ValueOf(p).Elem().Field(handledField).Bool(), true
}
