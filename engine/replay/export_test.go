package replay

import "reflect"

// Prefetched is how many calls Prefetch has loaded that no delivery has taken yet.
func Prefetched(h *History) int {
	h.prefetchMu.Lock()
	defer h.prefetchMu.Unlock()
	return len(h.prefetched)
}

// PrefetchAhead is prefetchAhead, for the tests.
const PrefetchAhead = prefetchAhead

// CallNumber is callNumber, for the tests.
var CallNumber = callNumber

// Kept reports whether what c's delivery reads of its rows was kept.
func Kept(c *Call) bool { k := c.kept.Load(); return k != nil && k != keptTaken }

// KeptWeight is what h keeps of its calls' rows now.
func KeptWeight(h *History) int { return h.keptWeight }

// NoRowsUnwritten reports whether the Rows every call without rows shares are still empty.
func NoRowsUnwritten() bool { return reflect.ValueOf(*noRows).IsZero() }
