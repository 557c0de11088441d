package status

import (
	"fmt"
	"io"
	"strings"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine/diagnosis"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// printStatus writes a run's state as crw flow status shows it.
func printStatus(w io.Writer, st *store.Status) {
	fmt.Fprintf(w, "run       %s\nworkflow  %s\nbackend   %s\nstate     %s\n", st.Run, st.Workflow, st.Backend, st.State)
	if st.Status != "" {
		fmt.Fprintf(w, "status    %s\n", st.Status)
	}
	if st.Holder != "" {
		fmt.Fprintf(w, "holder    %s\n", st.Holder)
	}
	fmt.Fprintf(w, "calls     %s (%d in flight)\ntokens    %d\n", cmdutil.CountsLine(st.Calls), st.InFlight, st.Tokens.Total)
	for _, d := range st.Decisions {
		if strings.HasPrefix(d.ID, journal.VerdictPrefix) {
			fmt.Fprintf(w, "decision  %s: %s\n", d.ID, d.Question) // the question says how
			continue
		}
		fmt.Fprintf(w, "decision  %s: %s\n          answer it: crw flow answer %s %s --value JSON\n", d.ID, d.Question, st.Run, d.ID)
	}
	if st.Error != nil {
		fmt.Fprintf(w, "error     %s\n", cmdutil.FailureLine(st.Error))
	} else if st.State == store.StateEnded {
		fmt.Fprintf(w, "result    %s\n", cmdutil.Compact(st.Result))
	}
	if n := diagnosis.StateNext(st); n != "" {
		fmt.Fprintf(w, "next      %s\n", n)
	}
}
