package agent

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dop251/goja"

	"github.com/crw-dev/crw/runtime/jsutil"
)

// Unobserved is an agent.call whose promise the workflow never awaited, nor observed any other
// way (then, Promise.all, …), by the time its loop ended: a forgotten await, whose call ran and
// whose result nobody read.
type Unobserved struct {
	Call string // the call's id, once its result was given ("" before)
	Site string // file:line:col of the agent.call
}

// Tracker follows the promises agent.call returns, on the loop goroutine only. It holds at most
// maxTracked of them at once, dropping those observed as it goes, so a run of any length costs
// no more than a few.
type Tracker struct {
	calls   []*tracked
	kept    int // len(calls) after the last prune
	dropped int // unobserved calls past maxTracked, not listed
	unknown bool
	// inflight are the calls not settled yet (each knows its slot); late those under way when
	// the workflow's entry function returned (Returned), whose results reached it no more.
	inflight []*tracked
	late     []*tracked
	returned bool
}

// tracked is one call, kept small: a run may have thousands waiting at once. Its id is read off
// its result when it is listed.
type tracked struct {
	p    *goja.Promise
	site string
	slot int // its place in inflight, -1 once settled
}

const (
	maxTracked = 10000
	minPrune   = 64
)

func (t *Tracker) add(p *goja.Promise, site string) *tracked {
	if t == nil {
		return nil
	}
	c := &tracked{p: p, site: site, slot: len(t.inflight)}
	t.inflight = append(t.inflight, c)
	// Pruned as the list doubles: an awaited call's promise, and the CallResult it holds, is let
	// go soon after it was made, and the cost is amortized over the calls.
	if len(t.calls) >= max(minPrune, 2*t.kept) {
		t.prune()
	}
	if len(t.calls) >= maxTracked {
		t.dropped++
		return c
	}
	t.calls = append(t.calls, c)
	return c
}

// settled notes that a call's result reached the script.
func (t *Tracker) settled(c *tracked) {
	if t == nil || c == nil || c.slot < 0 {
		return
	}
	last := t.inflight[len(t.inflight)-1]
	t.inflight[c.slot], last.slot = last, c.slot
	t.inflight[len(t.inflight)-1] = nil
	t.inflight = t.inflight[:len(t.inflight)-1]
	c.slot = -1
}

// callID is a tracked call's id, read off its CallResult once it has one.
func (c *tracked) callID() string {
	if c.p.State() != goja.PromiseStateFulfilled {
		return ""
	}
	if o, ok := c.p.Result().(*goja.Object); ok {
		if id, ok := o.Get("callId").Export().(string); ok {
			return id
		}
	}
	return ""
}

// Returned notes that the workflow's entry function has returned (its promise settled): the
// calls still under way then are late. Only the first call counts.
func (t *Tracker) Returned() {
	if t == nil || t.returned {
		return
	}
	t.returned = true
	for _, c := range t.inflight {
		if len(t.late) < maxTracked {
			t.late = append(t.late, c)
		}
	}
}

// Late lists the calls that were under way when the workflow returned, handled or not: their
// results reached no one (an async callback nobody awaited, as forEach's). They are in the
// order their calls were made.
func (t *Tracker) Late() []Unobserved {
	if t == nil {
		return nil
	}
	out := make([]Unobserved, 0, len(t.late))
	for _, c := range t.late {
		out = append(out, Unobserved{Call: c.callID(), Site: c.site})
	}
	slices.SortStableFunc(out, func(a, b Unobserved) int { return callOrder(a.Call) - callOrder(b.Call) })
	return out
}

// callOrder is a call id's number (c12: 12), for ordering.
func callOrder(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "c"))
	return n
}

// prune drops the calls observed so far: a promise once handled stays handled.
func (t *Tracker) prune() {
	kept := t.calls[:0]
	for _, c := range t.calls {
		handled, known := jsutil.PromiseHandled(c.p)
		if !known {
			t.unknown = true
		}
		if known && !handled {
			kept = append(kept, c)
		}
	}
	clear(t.calls[len(kept):])
	t.calls, t.kept = kept, len(kept)
}

// Unobserved lists the calls no one observed, in issue order, and how many more there were past
// what the Tracker holds. known is false when this goja cannot say.
func (t *Tracker) Unobserved() (calls []Unobserved, more int, known bool) {
	if t == nil {
		return nil, 0, false
	}
	t.prune()
	for _, c := range t.calls {
		calls = append(calls, Unobserved{Call: c.callID(), Site: c.site})
	}
	return calls, t.dropped, !t.unknown
}
