package diagnosis

import (
	"fmt"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Effects are a run's unresolved effects, at most limit of them (and how many there are in
// all), from the index its journal keeps (idx, read with at least limit entries): the calls whose outcome is unknown and
// has no verdict, in the order they were issued, then (unless the run has ended: no process
// takes it again to finish one) the commits whose results were not recorded.
func Effects(st *store.Status, idx *journal.Outstanding, limit int) (effects []Effect, total int) {
	run, ended := st.Run, st.State == store.StateEnded
	var commits []journal.CommitIntent
	if !ended {
		commits = idx.Commits
	}
	effects = []Effect{}
	for _, c := range idx.Unknown {
		e := Effect{Run: run, Call: c.Call, Kind: "call", Node: c.Node, Role: c.Role, Reason: c.Reason, Thread: c.Thread, Turns: c.Turns,
			Verify: fmt.Sprintf("whether the host ran the turn of call %s (thread %s, turn %s) and what it answered", c.Call, orNone(c.Thread), orNone(last(c.Turns))),
			Then:   fmt.Sprintf("crw flow recover %s %s --not-applied, or --applied [--output @FILE]", run, c.Call), RunEnded: ended}
		if ended {
			e.Then += " (the run has ended: the verdict is recorded and resumes nothing)"
		}
		effects = append(effects, e)
	}
	for _, in := range commits {
		if len(effects) == limit {
			break
		}
		effects = append(effects, Effect{Run: run, Kind: "commit", Node: in.Node, Ref: in.Ref,
			Verify: fmt.Sprintf("%s: the commit of tree %s on %s, which a resume finishes from its intent", in.Ref, in.Tree, in.Parent),
			Then:   "crw flow resume " + run})
	}
	return effects, idx.TotalUnknown + len(commits)
}

func orNone(s string) string {
	if s == "" {
		return "none recorded"
	}
	return s
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}
