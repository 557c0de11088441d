package inspect

import (
	"fmt"
	"io"
	"strings"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine/diagnosis"
)

// printInspection writes a run's diagnosis as crw flow inspect shows it.
func printInspection(w io.Writer, in *diagnosis.Inspection) {
	st := in.Status
	fmt.Fprintf(w, "run       %s\nstate     %s\n", st.Run, st.State)
	if st.Status != "" {
		fmt.Fprintf(w, "status    %s\n", st.Status)
	}
	fmt.Fprintf(w, "calls     %s\n", cmdutil.CountsLine(st.Calls))
	if len(in.InFlight) > 0 {
		fmt.Fprintf(w, "open      %s\n", strings.Join(in.InFlight, ", "))
	}
	for _, h := range in.Held {
		fmt.Fprintf(w, "held      node %s, by call %s (unknown outcome)\n", h.Node, h.Call)
	}
	for _, v := range in.Verdicts {
		fmt.Fprintf(w, "verdict   call %s %s, by %s%s\n", v.Call, v.Verdict, cmdutil.Dash(v.By), cmdutil.VerdictOutput(v.Output))
	}
	for _, d := range st.Decisions {
		fmt.Fprintf(w, "decision  %s: %s\n", d.ID, d.Question)
	}
	if st.Error != nil {
		fmt.Fprintf(w, "error     %s\n", cmdutil.FailureLine(st.Error))
	}
	if in.Log != "" {
		fmt.Fprintf(w, "log       %s\n", in.Log)
	}
	fmt.Fprintf(w, "backend   %s\n", in.Backend.Name)
	if in.Backend.Host != "" {
		fmt.Fprintf(w, "host      %s (%s)\n", in.Backend.Host, in.Backend.Reachable)
	}
	if in.Backend.HostLog != "" {
		fmt.Fprintf(w, "host log  %s\n", in.Backend.HostLog)
	}
	for _, n := range in.Next {
		fmt.Fprintf(w, "next      %s\n", n)
	}
}
