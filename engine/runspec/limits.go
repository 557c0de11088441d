package runspec

import (
	"fmt"
	"strings"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/runtime/limits"
	"github.com/crw-dev/crw/store"
)

// Limits bound what a run's workflow may take of the host, each nil for its default (the
// runtime's; store.Limits): an explicit zero is refused, but for Deadline, whose 0 is no
// deadline as nil is. The spec records those given.
type Limits struct {
	StackDepth  *int           // the deepest call stack the workflow may have: 1 or more
	HeapBytes   *int64         // the heap it may hold: 1 MiB to 1 PiB
	LoadTime    *time.Duration // how long its modules may take to load: 1 ms or more
	Deadline    *time.Duration // how long each process may run it: 0 (none) or 1 ms or more
	PromptBytes *int64         // one call's prompt: 1 KiB to store.MaxPromptBytes
	LogBytes    *int64         // the run's log: 1 MiB to store.MaxLogBytes
}

// maxHeapBytes bounds a heap limit: 1 PiB, far past any host, and far from overflowing.
const maxHeapBytes = 1 << 50

// Check refuses a limit out of its bounds, and is the limits as the spec records them: at a
// run's creation, and for a shadow of a trace, which records none.
func (l Limits) Check() (store.Limits, error) {
	var out store.Limits
	var p string
	if out.StackDepth, p = depth(l.StackDepth); p != "" {
		return out, errs.Field("limits.stack_depth", "", "%s", p)
	}
	if out.HeapBytes, p = size(l.HeapBytes, 1<<20, maxHeapBytes); p != "" {
		return out, errs.Field("limits.heap_bytes", "", "%s", p)
	}
	if out.PromptBytes, p = size(l.PromptBytes, 1<<10, store.MaxPromptBytes); p != "" {
		return out, errs.Field("limits.prompt_bytes", "", "%s", p)
	}
	if out.LogBytes, p = size(l.LogBytes, 1<<20, store.MaxLogBytes); p != "" {
		return out, errs.Field("limits.log_bytes", "", "%s", p)
	}
	if out.LoadTimeMS, p = millis(l.LoadTime, false); p != "" {
		return out, errs.Field("limits.load_time", "", "%s", p)
	}
	if out.DeadlineMS, p = millis(l.Deadline, true); p != "" {
		return out, errs.Field("limits.deadline", "", "%s", p)
	}
	return out, nil
}

// depth is a stack depth, 1 or more, or what is wrong with it; 0 when unset.
func depth(v *int) (int, string) {
	switch {
	case v == nil:
		return 0, ""
	case *v < 1 || *v > limits.MaxStackDepth:
		return 0, fmt.Sprintf("must be from 1 to %d, got %d", limits.MaxStackDepth, *v)
	}
	return *v, ""
}

// size is a limit in bytes from lo to hi, or what is wrong with it; 0 when unset.
func size(v *int64, lo, hi int64) (int64, string) {
	switch {
	case v == nil:
		return 0, ""
	case *v < lo || *v > hi:
		got := sizeText(*v)
		if *v == 0 {
			// In the unit of the least it may be, which its flag is given in (--max-prompt 0).
			got = "0" + strings.TrimLeft(sizeText(lo), "0123456789")
		}
		return 0, fmt.Sprintf("%s; it must be from %s to %s", got, sizeText(lo), sizeText(hi))
	}
	return *v, ""
}

// millis is a limit of time in milliseconds, 1 ms or more (or 0, where none is zero's
// meaning), or what is wrong with it; 0 when unset.
func millis(v *time.Duration, none bool) (int64, string) {
	switch {
	case v == nil, none && *v == 0:
		return 0, ""
	case *v < time.Millisecond && none:
		return 0, fmt.Sprintf("must be 0 (none) or 1ms or more, got %s", *v)
	case *v < time.Millisecond:
		return 0, fmt.Sprintf("must be 1ms or more, got %s", *v)
	}
	return v.Milliseconds(), ""
}

// sizeText is a size in bytes as a reader takes it in: 64 MiB, 1536 KiB, 100 bytes.
func sizeText(n int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{50, "PiB"}, {40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
