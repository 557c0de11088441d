package journal_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/journal"
)

// TestTypedRowsCarryTheirFields: each typed row sets its type and the fields it names, and no
// other.
func TestTypedRowsCarryTheirFields(t *testing.T) {
	t.Parallel()
	raw := "Here: {}"
	for _, tt := range []struct {
		got, want *journal.Row
	}{
		{journal.Warning{Call: "c1", Reason: "r", Detail: "d"}.Row(), &journal.Row{Type: "warning", Call: "c1", Reason: "r", Detail: "d"}},
		{journal.Held("quota", "d"), &journal.Row{Type: "held", Reason: "quota", Detail: "d"}},
		{journal.Refused("pair_refused", "d"), &journal.Row{Type: "refused", Reason: "pair_refused", Detail: "d"}},
		{journal.End{Type: journal.TypeSuperseded, Reason: "s"}.Row(), &journal.Row{Type: "superseded", Reason: "s"}},
		{journal.Completed{Output: json.RawMessage(`{}`), Extracted: true, RawText: &raw}.Row(),
			&journal.Row{Type: "completed", Output: json.RawMessage(`{}`), Extracted: true, RawText: &raw}},
	} {
		assert.Equal(t, tt.want, tt.got)
	}
}
