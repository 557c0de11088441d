package replay

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
