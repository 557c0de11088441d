// Package diagnosis says where a run stands and what moves it on, from what its status and
// the index its journal keeps say (never from its rows): the inspection crw flow inspect
// prints, the unresolved effects crw flow effects lists, and the next step of each state.
package diagnosis

import (
	"fmt"
	"strings"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Inspection is a run's diagnosis in one read: where it stands, what holds it, what is in
// flight, what it waits for, its last error, and what to do next.
type Inspection struct {
	Status *store.Status `json:"status"`
	// Held are the nodes a call with an unknown outcome holds (recovery_hold).
	Held []HeldNode `json:"held"`
	// InFlight are the calls with no outcome in their newest generation.
	InFlight []string `json:"in_flight"`
	Effects  []Effect `json:"effects"`
	// Verdicts are the operators' verdicts on unknown outcomes, in journal order.
	Verdicts []GivenVerdict `json:"verdicts"`
	// Log is where the run's errors are told in full (crw.log in its folder).
	Log string `json:"log"`
	// Next are the commands that move the run on, most pressing first.
	Next []string `json:"next"`
	// Backend is the run's backend as its spec records it: its name and options, and what the
	// command line adds of its host (its log, whether it answers).
	Backend BackendState `json:"backend"`
}

// BackendState is what an Inspection says of the run's backend.
type BackendState struct {
	Name    string            `json:"name"`
	Options map[string]string `json:"options,omitempty"`
	HostLog string            `json:"host_log,omitempty"`
	// Host is the owner's app server a session run reaches (its socket) and whether it
	// answered: reachable, unreachable (with why), or private (the run starts its own).
	Host      string `json:"host,omitempty"`
	Reachable string `json:"reachable,omitempty"`
}

// MaxListed bounds each list of an Inspection; maxNext the effects its Next names one by one.
const (
	MaxListed = 1000
	maxNext   = 10
)

// GivenVerdict is a verdict in a run's journal (journal.Verdict): on which call, which, by
// whom, when, and for an applied one what the call answered (left out past
// journal.MaxVerdictOutput bytes: crw flow show RUN tells it whole) and its digest.
type GivenVerdict = journal.Verdict

// HeldNode is a node in recovery hold and the call that holds it.
type HeldNode struct {
	Node string `json:"node"`
	Call string `json:"call"`
}

// Effect is an effect whose outcome is unknown and that no verdict decided: what to verify,
// where, and the command that reconciles it.
type Effect struct {
	Run    string   `json:"run"`
	Call   string   `json:"call"`
	Kind   string   `json:"kind"` // call (a turn's answer was lost) or commit (its result was not recorded)
	Node   string   `json:"node"`
	Role   string   `json:"role,omitempty"`
	Reason string   `json:"reason,omitempty"`
	Thread string   `json:"thread,omitempty"`
	Turns  []string `json:"turns,omitempty"`
	Ref    string   `json:"ref,omitempty"`
	Verify string   `json:"verify"`
	Then   string   `json:"then"`
	// RunEnded: the effect is of a run that has ended. Its verdict is recorded for the record
	// (crw flow recover takes it) and resumes nothing.
	RunEnded bool `json:"run_ended,omitempty"`
}

// Inspect diagnoses a run from its status, its spec (nil when it cannot be read), the name
// of its log and the index its journal keeps (read with MaxListed entries).
func Inspect(st *store.Status, spec *store.Spec, log string, idx *journal.Outstanding) *Inspection {
	run := st.Run
	in := &Inspection{Status: st, Held: []HeldNode{}, InFlight: []string{}, Effects: []Effect{}, Verdicts: []GivenVerdict{}, Next: []string{}, Log: log}
	if spec != nil {
		in.Backend = BackendState{Name: spec.Backend, Options: spec.BackendOptions}
	}
	for _, o := range idx.Open {
		in.InFlight = append(in.InFlight, o.Call)
	}
	in.Verdicts = idx.Verdicts
	// An ended run's effects are listed, marked: they stay unverified, though nothing of
	// the run is held any more.
	effects, total := Effects(st, idx, MaxListed)
	in.Effects = effects
	held := map[string]bool{}
	for _, e := range effects {
		if e.Kind == "call" && st.State != store.StateEnded && !held[e.Node] && len(in.Held) < MaxListed {
			held[e.Node] = true
			in.Held = append(in.Held, HeldNode{Node: e.Node, Call: e.Call})
		}
	}
	for i, e := range effects {
		if i == maxNext {
			in.Next = append(in.Next, fmt.Sprintf("and %d more unresolved effects: crw flow effects %s", total-maxNext, run))
			break
		}
		in.Next = append(in.Next, fmt.Sprintf("verify %s, then %s", e.Verify, e.Then))
	}
	for _, d := range st.Decisions {
		if strings.HasPrefix(d.ID, journal.VerdictPrefix) {
			continue // the workflow waits for a verdict: the effect above says how to give it
		}
		in.Next = append(in.Next, fmt.Sprintf("answer the decision %s (%s): crw flow answer %s %s --value JSON", d.ID, d.Question, run, d.ID))
	}
	switch st.State {
	case store.StateEnded:
		if len(in.Next) == 0 {
			in.Next = append(in.Next, "the run has ended ("+string(st.Status)+"): crw flow show "+run+" tells how")
		}
	default:
		if n := StateNext(st); n != "" {
			in.Next = append(in.Next, n)
		}
	}
	return in
}

// StateNext is what a run's state says to do next: resume a run no process holds that has not
// ended (paused: how, for what paused it), follow a running one; "" for a run that has ended
// or waits for decisions (each says how it is answered).
func StateNext(st *store.Status) string {
	run := st.Run
	if st.State.WaitsForAProcess() && len(st.Unserved) > 0 {
		return "no process holds the run, and the workers that looked could not take it (" + strings.Join(st.Unserved, "; ") +
			"): start a worker that offers what it needs (crw worker --offers), or crw flow resume " + run + " on a host that has it"
	}
	switch st.State {
	case store.StateCrashed:
		return "no process holds the run and it has not ended: crw flow resume " + run + " (a worker, crw worker, takes such runs too)"
	case store.StateQueued:
		return "no process has run it yet: a worker (crw worker) takes it, or crw flow resume " + run + " runs it here"
	case store.StateWaitingResume:
		return "the decisions it waited for are answered and no process holds it: crw flow resume " + run + " goes on"
	case store.StatePaused:
		why, how := PausedBy(st)
		return why + " paused it: " + how
	case store.StateRunning:
		if st.Holder != "" {
			return st.Holder + ": continue it (kill -CONT, or fg in its terminal), or end it and crw flow resume " + run
		}
		return "its process works on it: crw flow follow " + run
	}
	return ""
}

// PausedBy tells what paused a run and how it goes on: once a limit has passed, and with a
// budget above what it has spent when its own token budget held its calls. A status that does
// not say what paused it (a run paused by an earlier crw) names both.
func PausedBy(st *store.Status) (why, how string) {
	resume := "crw flow resume " + st.Run
	budget := func(spent int64) string {
		return fmt.Sprintf("%s --budget-tokens N with N above the %d tokens it has spent (0: no budget)", resume, spent)
	}
	p := st.Paused
	if p == nil || (!p.Limit && !p.HostBudget && p.Budget == 0) {
		return "a usage or rate limit, or its token budget", "once the limit has passed, " + resume + "; for its budget, " + budget(st.Tokens.Total)
	}
	var causes, once []string
	if p.Limit {
		causes, once = append(causes, "a usage or rate limit"), append(once, "the limit has passed")
	}
	if p.HostBudget {
		causes, once = append(causes, "the host's session budget"), append(once, "the host has raised it")
	}
	if p.Budget > 0 {
		causes = append(causes, fmt.Sprintf("its token budget of %d", p.Budget))
		resume = budget(p.Spent)
	}
	how = resume
	if len(once) > 0 {
		how = "once " + strings.Join(once, " and ") + ", " + resume
	}
	return strings.Join(causes, " and "), how
}
