// Package natives bounds the natives of a workflow's goja runtime that goja cannot interrupt:
// what one native step walks (an array's length, a buffer, JSON.stringify's depth), what it
// builds (a string a replace, split, join or repeat makes), the RegExp patterns compiled and
// the searches run, and the code built at run time. It stays over 1,500 lines as one package
// because its guards share one state of the runtime (the matches a replace may make, the time
// the searches under a native took, the arrays being joined) across the String and RegExp
// natives that call each other.
package natives

import (
	"sync/atomic"
	"time"

	"github.com/dop251/goja"

	"github.com/crw-dev/crw/runtime/limits"
)

// Guards are the guards installed in one runtime, and the state they share.
type Guards struct {
	rt         *goja.Runtime
	heapBytes  int64        // the workflow's heap limit
	rangeError goja.Value   // the RangeError constructor, taken before the script runs
	regExp     *goja.Object // the RegExp constructor
	// newRegExp is goja's own construction of a RegExp, past crw's bound on the pattern.
	newRegExp func(args []goja.Value, newTarget *goja.Object) *goja.Object
	stopping  atomic.Bool // an interrupt is on its way: native guards stop what they run
	// stopLimit stops the script for a limit a native guard found passed, while a guard runs.
	stopLimit func(*limits.LimitError)
	// searchNested is the time the searching natives under the current one ran.
	searchNested time.Duration
	// matchLimit, when not 0, bounds the matches exec makes for matchOp; matchCount counts them.
	matchLimit, matchCount int
	matchOp                string
	joining                []*goja.Object // the arrays join and toLocaleString are in
	gopd                   goja.Callable  // Object.getOwnPropertyDescriptor
	regExpProto            *goja.Object
	execFn                 goja.Value    // RegExp.prototype.exec
	builtinExec            goja.Callable // the same, to call
	sourceOf, globalOf     goja.Callable // the getters of RegExp.prototype.source and global
	species                goja.Value    // the getter of RegExp[Symbol.species]
}

// Stopping tells the guards whether an interrupt is on its way: while it is, they stop what
// they run.
func (v *Guards) Stopping(on bool) { v.stopping.Store(on) }

// OnLimit sets what stops the script for a limit a guard found passed (nil: nothing, outside
// the script's run).
func (v *Guards) OnLimit(stop func(*limits.LimitError)) { v.stopLimit = stop }
