package foreground

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/journal"
)

// TestCallsFromTheJournalAreOneLine: the calls a resume takes from the journal are told as one
// line of how many ended how, written before the next line of any kind (a call made now, the
// workflow's output, a warning, the end): a resume of 10,000 calls writes one line, not 10,000.
// A lone one keeps its own line.
func TestCallsFromTheJournalAreOneLine(t *testing.T) {
	var out bytes.Buffer
	p := newProgressLine(&out, false, false)
	p.started("r1")
	replayed := func(call string, status journal.CallStatus, reason string) {
		p.event(progress.Event{Kind: progress.EventCallEnded, Call: call, Role: "reviewer", Node: "a", Status: status, Reason: reason, Replayed: true})
	}
	for i := 1; i <= 9998; i++ {
		replayed(fmt.Sprintf("c%d", i), "completed", "")
	}
	replayed("c9999", "held", "cancelled")
	replayed("c10000", "null_model", "parse_failed")
	fmt.Fprint(p.logWriter(), "info: replayed\n")
	replayed("c10001", "completed", "")
	p.event(progress.Event{Kind: progress.EventCallEnded, Call: "c10002", Role: "critic", Node: "b", Status: "completed"})
	replayed("c10003", "completed", "")
	replayed("c10004", "refused", "policy")
	p.event(progress.Event{Kind: progress.EventWarning, Detail: "slow"})
	replayed("c10005", "completed", "")
	replayed("c10006", "completed", "")
	p.done()
	assert.Equal(t, "run r1 started\n"+
		"10000 calls from the journal: 9998 completed, 1 null_model, 1 held\n"+
		"info: replayed\n"+
		"call c10001 reviewer/a completed, from the journal\n"+
		"call c10002 critic/b completed\n"+
		"2 calls from the journal: 1 completed, 1 refused\n"+
		"warning: slow\n"+
		"2 calls from the journal: 2 completed\n", out.String())
}
