package ends

import (
	"fmt"

	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/runtime/modules/agent"
)

// Unawaited are the warnings of the agent.calls a workflow never awaited nor observed
// (unobserved, a forgotten await: the call ran and nobody read its result) and of those still
// under way when it returned (late: their results reached no one), a call once, the unobserved
// first. The calls warned of already (warned: a resume that replays the run finds the warnings
// an earlier process wrote) are left out, and past replay.MaxUnawaited in all the rest are
// counted in more, which starts at what the tracker dropped.
func Unawaited(unobserved, late []agent.Unobserved, more int, warned map[string]bool) ([]journal.Warning, int) {
	type warning struct {
		agent.Unobserved
		late bool
	}
	var all []warning
	seen := map[string]bool{}
	for _, c := range unobserved {
		all, seen[c.Call] = append(all, warning{c, false}), true
	}
	for _, c := range late {
		if !seen[c.Call] {
			all, seen[c.Call] = append(all, warning{c, true}), true
		}
	}
	n := len(warned)
	var out []journal.Warning
	for _, c := range all {
		if c.Call == "" || warned[c.Call] {
			continue
		}
		if n >= replay.MaxUnawaited {
			more++
			continue
		}
		n++
		detail := fmt.Sprintf("agent.call at %s (call %s) was never awaited: the workflow ended without reading its result (a forgotten await?)", c.Site, c.Call)
		if c.late {
			detail = fmt.Sprintf("agent.call at %s (call %s) was still under way when the workflow returned: its result reached no one (an async callback nobody awaited, as forEach's?)", c.Site, c.Call)
		}
		out = append(out, journal.Warning{Call: c.Call, Reason: replay.ReasonUnawaited, Detail: detail})
	}
	return out, more
}
