package agent

import "github.com/dop251/goja"

// Unobserved is an agent.call whose promise the workflow never awaited, nor observed any other
// way (then, Promise.all, …), by the time its loop ended: a forgotten await, whose call ran and
// whose result nobody read.
type Unobserved struct {
	Call string // the call's id, once its result was given ("" before)
	Site string // file:line:col of the agent.call, where the host knows it
}

// Tracker follows the promises agent.call returns, on the loop goroutine only. It holds at most
// maxTracked of them at once, dropping those observed as it goes, so a run of any length costs
// no more than a few; each costs a pointer (the call's id is read off its result, and its site
// is the host's to know: its prepared row has it).
type Tracker struct {
	calls   []*goja.Promise
	kept    int // len(calls) after the last prune
	dropped int // unobserved calls past maxTracked, not listed
}

const (
	maxTracked = 10000
	minPrune   = 64
)

func (t *Tracker) add(p *goja.Promise) {
	if t == nil {
		return
	}
	// Pruned as the list doubles: an awaited call's promise, and the CallResult it holds, is let
	// go soon after it was made, and the cost is amortized over the calls.
	if len(t.calls) >= max(minPrune, 2*t.kept) {
		t.prune()
	}
	if len(t.calls) >= maxTracked {
		t.dropped++
		return
	}
	t.calls = append(t.calls, p)
}

// prune drops the calls observed so far: a promise once handled stays handled.
func (t *Tracker) prune() {
	kept := t.calls[:0]
	for _, p := range t.calls {
		if !p.Handled() {
			kept = append(kept, p)
		}
	}
	clear(t.calls[len(kept):])
	t.calls, t.kept = kept, len(kept)
}

// Unobserved lists the calls no one observed, in issue order, and how many more there were past
// what the Tracker holds.
func (t *Tracker) Unobserved() (calls []Unobserved, more int) {
	if t == nil {
		return nil, 0
	}
	t.prune()
	for _, p := range t.calls {
		calls = append(calls, Unobserved{Call: callID(p)})
	}
	return calls, t.dropped
}

// callID is a call's id, read off its CallResult once it has one.
func callID(p *goja.Promise) string {
	if p.State() != goja.PromiseStateFulfilled {
		return ""
	}
	if o, ok := p.Result().(*goja.Object); ok {
		if id, ok := o.Get("callId").Export().(string); ok {
			return id
		}
	}
	return ""
}
