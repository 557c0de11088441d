package runner

import (
	"slices"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/runner/readback"
)

// conversation is the journal's record of the continuation chain that ends with e
// (readback.Conversation): a run keeps no prompt or answer of an ended call in memory.
func (r *runner) conversation(e *endedCall) ([]backend.Exchange, error) {
	var chain []readback.Link
	for x := e; x != nil; x = x.prev {
		chain = append(chain, readback.Link{Call: x.id, PreparedSeq: x.preparedSeq, EndSeq: x.endSeq})
	}
	slices.Reverse(chain)
	return readback.Conversation(r.j, r.id, chain)
}
