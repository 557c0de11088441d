package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/schema"
)

// Case is everything one simulation runs: the workflow, what the model and host answer, the
// faults, and how the operator answers.
type Case struct {
	Seed    uint64  `json:"seed"`
	Program Program `json:"program"`
	// Answers script each call by its issue order (1-based); a call with none gets an answer
	// synthesized from its schema.
	Answers map[int][]fake.Turn `json:"answers"`
	Faults  Faults              `json:"faults"`
	// Repo: the run works on a scratch git repository (executors, commits).
	Repo bool `json:"repo"`
	// RepoFiles are the files the scratch repository holds besides its two: a repository of
	// some size, whose checkouts take git long enough for a pause or a stop to come while a
	// call's worktree is being made.
	RepoFiles int `json:"repo_files,omitempty"`
	Pool      int `json:"pool"`
	// TierAsk runs with --tier-steps ask.
	TierAsk bool `json:"tier_ask,omitempty"`
	// Verdicts says, by the issue order of a call that ended unknown, whether its effect is
	// given as applied; Decisions the boolean each decision is answered with.
	Verdicts  map[int]bool    `json:"verdicts,omitempty"`
	Decisions map[string]bool `json:"decisions,omitempty"`
	// ReplayBudget is the service's (engine.Service.ReplayBudget): what a resume keeps of
	// the calls' rows it delivers, the rest read again. 0 is crw's; small and none take a
	// run's resumes down the reading-again path.
	ReplayBudget int `json:"replay_budget,omitempty"`
}

// Faults are what goes wrong around a run beyond what its answers script.
type Faults struct {
	// Crashes are, for the run's processes in turn, the journal commit after which each loses
	// its hold on the run as a killed process would (0: that process is not crashed).
	Crashes []uint64 `json:"crashes,omitempty"`
	// Stops are, for the run's processes in turn, the progress event after which each is
	// stopped as a signal stops it (0: not stopped).
	Stops []int `json:"stops,omitempty"`
	// Budget is the run's --budget-tokens (0: none); a resume lifts it.
	Budget int64 `json:"budget,omitempty"`
	// CancelAfter cancels the run once this many processes of it have ended (0: never).
	CancelAfter int `json:"cancel_after,omitempty"`
	// Abandon: the run is deleted after its first crash instead of being resumed.
	Abandon bool `json:"abandon,omitempty"`
	// Restarts are, for the crashes in turn, whether the machine restarted after it (not 0),
	// where a store plays one (MachineRestarter): the value picks how much of the journal's
	// unsynced file the restart took, whether a resume or the operator's next command of
	// another kind recovers it, and whether a first recovery is killed midway (recoveryKill).
	Restarts []uint64 `json:"restarts,omitempty"`
}

// Racy reports whether the program's result may depend on timing: a race.
func (c *Case) Racy() bool {
	for _, s := range c.Program.Stmts {
		if s.Kind == KindRace {
			return true
		}
	}
	return false
}

// pauseErrors are the codexErrorInfo kinds after which a run ends paused: its limits, and the
// host's session budget. A resume, once they have passed, runs the calls they held again.
var pauseErrors = map[string]bool{"usageLimitExceeded": true, "rateLimitExceeded": true, "sessionBudgetExceeded": true}

// otherErrors are the codexErrorInfo kinds of the table that do not pause the run.
var otherErrors = []string{"serverOverloaded", "httpConnectionFailed", "responseStreamConnectionFailed", "responseStreamDisconnected",
	"responseTooManyFailedAttempts", "threadRollbackFailed", "activeTurnNotSteerable", "other", "sessionBudgetExceeded", "badRequest",
	"unauthorized", "sandboxError", "cyberPolicy", "misalignmentPolicyViolation", "contextWindowExceeded", "none", "aKindNoTableLists"}

// Healed are the answers a run resumed after a pause gets: the scripted limits have passed.
func (c *Case) Healed() map[int][]fake.Turn {
	out := map[int][]fake.Turn{}
	for k, turns := range c.Answers {
		if len(turns) > 0 && turns[0].Error != nil && pauseErrors[*turns[0].Error] {
			continue
		}
		out[k] = turns
	}
	return out
}

// AnswersFile is an answers map as the fake backend reads it.
func AnswersFile(answers map[int][]fake.Turn) []byte {
	keys := make([]int, 0, len(answers))
	for k := range answers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var f fake.Answers
	for _, k := range keys {
		call := k
		f.Entries = append(f.Entries, fake.Entry{Match: fake.Match{Call: &call}, Turns: answers[k]})
	}
	if f.Entries == nil {
		f.Entries = []fake.Entry{}
	}
	data, _ := json.MarshalIndent(f, "", "  ")
	return data
}

// gen is the generator's state for one case.
type gen struct {
	rnd    *rand.Rand
	c      *Case
	vars   int      // the last variable number given
	usable []Call   // calls whose results later statements may look at
	nodes  []string // the nodes so far
	issued int      // calls the program issues at most before the current statement
	decide int
}

// Generate makes the case of a seed.
func Generate(seed uint64) *Case {
	g := &gen{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), c: &Case{Seed: seed, Answers: map[int][]fake.Turn{},
		Verdicts: map[int]bool{}, Decisions: map[string]bool{}}}
	c := g.c
	c.Repo = g.chance(0.35)
	c.Pool = 1 + g.rnd.IntN(4)
	c.TierAsk = c.Repo && g.chance(0.2)
	n := 1 + g.rnd.IntN(7)
	for i := 0; i < n; i++ {
		g.statement()
	}
	g.faults()
	// Drawn apart from the rest, so the cases of the seeds from before it are the same.
	if size := rand.New(rand.NewPCG(seed, 0x7265706f)); c.Repo && size.Float64() < 0.15 {
		c.RepoFiles = 800
	}
	// Apart too: half the decisions build their schema from the result they are about.
	built := rand.New(rand.NewPCG(seed, 0x6275696c))
	for i := range c.Program.Stmts {
		if st := &c.Program.Stmts[i]; st.Kind == KindDecide {
			st.Built = built.Float64() < 0.5
		}
	}
	// Apart too: a run without a repository commits now and then, which crw.commit refuses
	// there (invalid_request, caught), in the run and in its shadow alike.
	if commits := rand.New(rand.NewPCG(seed, 0x636f6d6d)); !c.Repo && commits.Float64() < 0.2 {
		node := "n1"
		if len(g.nodes) > 0 {
			node = g.nodes[commits.IntN(len(g.nodes))]
		}
		at := commits.IntN(len(c.Program.Stmts) + 1)
		c.Program.Stmts = slices.Insert(c.Program.Stmts, at, Stmt{Kind: KindCommit, Node: node})
	}
	// Apart too: a third of the cases keep no call's rows, a third a few calls' (about 600
	// bytes each), a third crw's budget.
	c.ReplayBudget = [...]int{-1, 1500, 0}[rand.New(rand.NewPCG(seed, 0x6b657074)).IntN(3)]
	// Apart too: a third of the crashes are the machine's.
	restarts := rand.New(rand.NewPCG(seed, 0x626f6f74))
	for _, n := range c.Faults.Crashes {
		var tear uint64
		if n > 0 && restarts.IntN(3) == 0 {
			tear = 1 + restarts.Uint64N(1<<20)
		}
		c.Faults.Restarts = append(c.Faults.Restarts, tear)
	}
	if !slices.ContainsFunc(c.Faults.Restarts, func(t uint64) bool { return t > 0 }) {
		c.Faults.Restarts = nil
	}
	// Apart too: a third of the restarts' recoveries are killed once, at one of the rebuild's
	// steps (recoveryKill), before the recovery that goes through.
	kills := rand.New(rand.NewPCG(seed, 0x6b696c6c))
	for i, tear := range c.Faults.Restarts {
		if tear > 0 && kills.IntN(3) == 0 {
			c.Faults.Restarts[i] |= uint64(1+kills.IntN(2)) << killShift
		}
	}
	return c
}

// killShift is where a restart's value says whether its first recovery is killed: 0 not, 1 with
// the torn file kept aside, 2 with the file made again in place, before the log says so. The
// bits below it pick the tear (local.Store.RestartMachine).
const killShift = 20

// recoveryKill is the step of the rebuild at which the first recovery after a restart of value
// tear is killed, "" when it is not.
func recoveryKill(tear uint64) string {
	switch tear >> killShift & 3 {
	case 1:
		return "kept"
	case 2:
		return "renamed"
	}
	return ""
}

func (g *gen) chance(p float64) bool { return g.rnd.Float64() < p }

func (g *gen) pick(xs []string) string { return xs[g.rnd.IntN(len(xs))] }

// node is a node for a new call: a new one, or one used before.
func (g *gen) node() string {
	if len(g.nodes) > 0 && g.chance(0.4) {
		return g.pick(g.nodes)
	}
	n := "n" + strconv.Itoa(len(g.nodes)+1)
	g.nodes = append(g.nodes, n)
	return n
}

// call makes a call on node (a new or used one when ""), scripting its answers.
func (g *gen) call(node string, role string) Call {
	g.vars++
	if role == "" {
		roles := []string{"architect", "reviewer", "explorer", "critic"}
		if g.c.Repo {
			roles = append(roles, "executor", "executor")
		}
		role = g.pick(roles)
	}
	if node == "" {
		node = g.node()
	}
	c := Call{Var: g.vars, Role: role, Node: node, Prompt: fmt.Sprintf("task %d of %s", g.vars, node)}
	switch r := g.rnd.Float64(); {
	case r < 0.2:
	case r < 0.6:
		c.Schema = g.pick(libSchemas)
	default:
		c.Schema = "inline:" + g.pick([]string{"flag", "items", "note"})
	}
	return c
}

// answer scripts the turns of the call the program issues at issue order k.
func (g *gen) answer(k int, c Call) {
	var turns []fake.Turn
	text := func(s string) *string { return &s }
	switch r := g.rnd.Float64(); {
	case r < 0.45:
		// synthesized: valid
	case r < 0.55:
		turns = []fake.Turn{{Text: text("not what was asked")}} // a repair, then a valid answer
	case r < 0.62:
		turns = []fake.Turn{{Text: text("no")}, {Text: text("still no")}} // null_model (with a schema)
	case r < 0.68:
		if s, ok := inlineSchemas[trimInline(c.Schema)]; ok {
			doc, err := schema.Synthesize([]byte(s))
			if err == nil {
				turns = []fake.Turn{{Text: text("Here it is:\n" + string(doc) + "\n")}} // prose around JSON
			}
		}
	case r < 0.74:
		turns = []fake.Turn{{Lost: true}}
	case r < 0.82:
		kind := g.pick([]string{"rateLimitExceeded", "usageLimitExceeded"})
		turns = []fake.Turn{{Error: &kind}}
	default:
		kind := g.pick(otherErrors)
		turns = []fake.Turn{{Error: &kind}}
	}
	if c.Role == "executor" || c.Role == "executor-t1" {
		// An executor writes a file of its own into its worktree.
		content := fmt.Sprintf("work of call %d\n", k)
		file := map[string]*string{fmt.Sprintf("out/%s-%d.txt", c.Node, k): &content}
		if len(turns) == 0 {
			turns = []fake.Turn{{Files: file}}
			if c.Schema == "" {
				turns[0].Text = text("built")
			} else {
				doc, err := synthesizeNamed(c.Schema)
				if err != nil {
					turns = nil
				} else {
					turns[0].JSON = doc
				}
			}
		} else if turns[0].Text != nil || turns[0].JSON != nil {
			turns[0].Files = file
		}
	}
	for i := range turns {
		if g.chance(0.3) {
			turns[i].DelayMS = int64(g.rnd.IntN(25))
		}
	}
	if len(turns) > 0 {
		g.c.Answers[k] = turns
	} else if g.chance(0.3) {
		// A delay alone reorders parallel calls; the answer is still synthesized.
		g.c.Answers[k] = []fake.Turn{{DelayMS: int64(g.rnd.IntN(25)), JSON: mustSynth(c.Schema), Text: textIfNoSchema(c.Schema)}}
	}
	g.c.Verdicts[k] = g.chance(0.5)
}

func trimInline(s string) string {
	if len(s) > 7 && s[:7] == "inline:" {
		return s[7:]
	}
	return ""
}

// statement adds one statement to the program.
func (g *gen) statement() {
	p := &g.c.Program
	add := func(s Stmt) { p.Stmts = append(p.Stmts, s) }
	issue := func(c Call) Call {
		g.issued++
		g.answer(g.issued, c)
		return c
	}
	switch r := g.rnd.Float64(); {
	case r < 0.3:
		c := issue(g.call("", ""))
		c.Try = g.chance(0.2)
		add(Stmt{Kind: KindCall, Calls: []Call{c}})
		g.usable = append(g.usable, c)
	case r < 0.5:
		// Parallel calls on distinct nodes: their results do not depend on their timing.
		n := 2 + g.rnd.IntN(3)
		var calls []Call
		seen := map[string]bool{}
		for len(calls) < n {
			node := g.node()
			if seen[node] {
				continue
			}
			seen[node] = true
			calls = append(calls, issue(g.call(node, "")))
		}
		add(Stmt{Kind: KindAll, Calls: calls})
		g.usable = append(g.usable, calls...)
	case r < 0.55:
		var calls []Call
		for i := 0; i < 2; i++ {
			calls = append(calls, issue(g.call("race-"+strconv.Itoa(g.vars+1), "explorer")))
		}
		add(Stmt{Kind: KindRace, Calls: calls})
	case r < 0.62:
		n := 1 + g.rnd.IntN(3)
		c := g.call("", "")
		for i := 0; i < n; i++ {
			g.issued++
			g.answer(g.issued, c)
		}
		add(Stmt{Kind: KindLoop, Calls: []Call{c}, N: n})
	case r < 0.7 && len(g.usable) > 0:
		of := g.usable[g.rnd.IntN(len(g.usable))]
		c := issue(g.call(of.Node, of.Role))
		add(Stmt{Kind: KindContinue, Of: of.Var, Calls: []Call{c}})
	case r < 0.76 && len(g.usable) > 0:
		of := g.usable[g.rnd.IntN(len(g.usable))]
		g.vars++
		c := of
		c.Var, c.Try = g.vars, false
		c = issue(c)
		add(Stmt{Kind: KindRetry, Of: of.Var, Calls: []Call{c}})
	case r < 0.83 && len(g.usable) > 0:
		g.decide++
		id := "d" + strconv.Itoa(g.decide)
		g.c.Decisions[id] = g.chance(0.7)
		add(Stmt{Kind: KindDecide, Of: g.usable[g.rnd.IntN(len(g.usable))].Var, ID: id})
	case r < 0.89 && g.c.Repo:
		add(Stmt{Kind: KindCommit, Node: g.pickExecutorNode()})
	case r < 0.93 && len(g.usable) > 0:
		of := g.usable[g.rnd.IntN(len(g.usable))]
		add(Stmt{Kind: KindTier, Of: of.Var, Node: of.Node})
	case r < 0.96:
		add(Stmt{Kind: KindLog, N: len(p.Stmts)})
	case r < 0.975:
		add(Stmt{Kind: KindTimer})
	case r < 0.99:
		add(Stmt{Kind: KindBadCall})
	default:
		if len(g.usable) > 0 {
			add(Stmt{Kind: KindUnsafe, Of: g.usable[g.rnd.IntN(len(g.usable))].Var})
		}
	}
}

// pickExecutorNode is the node of an executor call so far, else any node.
func (g *gen) pickExecutorNode() string {
	var nodes []string
	for _, c := range g.c.Program.Vars() {
		if c.Role == "executor" {
			nodes = append(nodes, c.Node)
		}
	}
	if len(nodes) == 0 {
		return g.node()
	}
	return g.pick(nodes)
}

// faults picks the case's faults.
func (g *gen) faults() {
	f := &g.c.Faults
	for i := 0; i < 3 && g.chance(0.5); i++ {
		f.Crashes = append(f.Crashes, uint64(1+g.rnd.IntN(12)))
	}
	if g.chance(0.2) {
		f.Stops = append(f.Stops, 1+g.rnd.IntN(8))
	}
	if g.chance(0.1) {
		f.Budget = int64(20 + g.rnd.IntN(200))
	}
	if g.chance(0.06) {
		f.CancelAfter = 1 + g.rnd.IntN(2)
	}
	if len(f.Crashes) > 0 && g.c.Repo && g.chance(0.1) {
		f.Abandon = true
	}
}

// synthesizeNamed is an answer a schema of the generated workflows admits.
func synthesizeNamed(name string) (json.RawMessage, error) {
	if s, ok := inlineSchemas[trimInline(name)]; ok {
		return schema.Synthesize([]byte(s))
	}
	s, err := LibSchema(name)
	if err != nil {
		return nil, err
	}
	return schema.Synthesize(s)
}

func mustSynth(name string) json.RawMessage {
	if name == "" {
		return nil
	}
	doc, _ := synthesizeNamed(name)
	return doc
}

func textIfNoSchema(name string) *string {
	if name != "" {
		return nil
	}
	s := "ok, later"
	return &s
}
