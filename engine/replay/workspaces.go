package replay

import (
	"slices"

	"github.com/crw-dev/crw/journal"
)

// Node is what the journal says of a node's workspace (docs/workspaces.md): its newest
// allocation (the attempt worktree its executor calls share), the commit the worktree is to be
// at, the tree it last held, the value the run gave the node's ref, and its tier.
type Node struct {
	Name  string
	Alloc int    // the newest allocation (0: none yet)
	Path  string // its worktree
	Start string // the commit it started at
	At    string // the commit the worktree is to be at: the last crw.commit since Start, else Start
	Tree  string // the tree it held at the end of its last executor call or commit ("": At's)
	Ref   string // the commit the run last put on the node's ref ("": none)
	Tier  int    // the tier steps it took
	// NextAlloc is set by a tier step: the next executor call of the node makes that
	// allocation, from the node's ref (or the run's head).
	NextAlloc int
	// Open: an executor call of the newest allocation has no terminal row, so its worktree
	// may hold more than Tree (the call's work so far).
	Open bool
	// PlacedSeq is the seq of the newest row that placed an executor call in its worktree.
	PlacedSeq uint64
}

// Commit is one crw.commit: its intent row and, once it is recorded, its result row.
type Commit struct {
	Intent, Result *journal.Row
}

// Decision is one crw.decide: its request and, once answered, the answer.
type Decision struct {
	Request, Answer *journal.Row
	// Call stands for the answer's delivery in the History's Order.
	Call *Call
	// Left: the process that asked it had a result a pause held (History.PauseHeldFrom), and
	// a later process ran the held call again (builder.leave).
	Left bool
}

// Writes reports whether a role's calls change their directory: the executor's tiers.
func Writes(role string) bool { return role == "executor" || role == "executor-t1" }

// workspaceRow reads a row of the workspaces into the History; false for any other row.
func (b *builder) workspaceRow(row *journal.Row) bool {
	h := b.h
	own := func() *journal.Row {
		if b.paged {
			cp := *row // kept to the end: not with the rest of its page
			return &cp
		}
		return row
	}
	switch row.Type {
	case journal.TypeCommitIntent:
		h.Commits = append(h.Commits, &Commit{Intent: own()})
	case journal.TypeCommitResult:
		// A result follows its intent, or it is the result of a superseded intent whose
		// process died before it: the resume that superseded it recorded what git did.
		if c := h.UnfinishedCommit(); c != nil {
			r := own()
			c.Result = r
			if r.Commit != "" {
				nd := h.node(r.Node)
				nd.At, nd.Ref, nd.Tree = r.Commit, r.Commit, r.Tree
			}
		}
	case journal.TypeTierStep:
		r := own()
		h.TierSteps = append(h.TierSteps, r)
		nd := h.node(r.Node)
		nd.Tier, nd.NextAlloc = r.Tier, r.Alloc
	case journal.TypeDecisionRequested:
		r := own()
		switch d := h.Decisions[r.DecisionID]; {
		case d == nil:
			h.Decisions[r.DecisionID] = &Decision{Request: r}
			h.DecisionOrder = append(h.DecisionOrder, r.DecisionID)
		case d.Answer == nil:
			// Asked again, its question reading otherwise (a resume): the newest is shown,
			// asked by a process that had the results it asked it with.
			d.Request, d.Left = r, false
		default:
			// Asked anew after its answer: the process that asked it had a result a pause
			// held, and a resume that ran the call again asks with another schema
			// (decisions.Book.Decide). The answer was given to the question the record left;
			// the newest asking waits for its own.
			h.Order = slices.DeleteFunc(h.Order, func(c *Call) bool { return c == d.Call })
			d.Request, d.Answer, d.Call, d.Left = r, nil, nil, false
		}
	case journal.TypeDecisionAnswered:
		if d := h.Decisions[row.DecisionID]; d != nil && d.Answer == nil {
			d.Answer = own()
			// The answer reaches the script at its place among the calls' results, as it
			// did in the process that took it: it is one of the deliveries the replay orders.
			d.Call = &Call{Rows: noRows, ID: "decision:" + row.DecisionID, EndType: row.Type, EndSeq: row.Seq, Decision: true}
			h.Order = append(h.Order, d.Call)
		}
	case journal.TypeEffectReconciled:
		r := own()
		if _, done := h.Reconciled[r.Effect]; !done {
			h.Reconciled[r.Effect] = r
			if key, ok := h.UnknownKeys[r.Effect]; ok && r.Verdict == "applied" {
				if _, had := h.Applied[key]; !had {
					h.Applied[key] = r.Effect
				}
			}
			// The verdict reaches the script (crw.effect) at its place among the deliveries,
			// as it did in the process that journaled it.
			c := &Call{Rows: noRows, ID: "effect:" + r.Effect, EndType: r.Type, EndSeq: r.Seq, Decision: true}
			h.VerdictCalls[r.Effect] = c
			h.Order = append(h.Order, c)
			// The verdict releases the node's recovery hold for the calls after it, once no
			// other call of the node waits for one.
			for node, calls := range h.Unknown {
				if rest := slices.DeleteFunc(slices.Clone(calls), func(c string) bool { return c == r.Effect }); len(rest) < len(calls) {
					h.Unknown[node] = rest
					if len(rest) == 0 {
						delete(h.Unknown, node)
						delete(h.Holds, node)
					} else {
						h.Holds[node] = rest[0]
					}
				}
			}
		}
	default:
		return false
	}
	return true
}

// UnfinishedCommit is the newest commit intent, superseded or not, when it has no result yet
// and was no refusal: its process died between the two.
func (h *History) UnfinishedCommit() *Commit {
	var newest *Commit
	if n := len(h.Commits); n > 0 {
		newest = h.Commits[n-1]
	}
	if n := len(h.Superseded); n > 0 && (newest == nil || h.Superseded[n-1].Intent.Seq > newest.Intent.Seq) {
		newest = h.Superseded[n-1]
	}
	if newest == nil || newest.Result != nil || newest.Intent.Status != "" {
		return nil
	}
	return newest
}

// placement is what a call's workspace_placed row says: its kind and its node's allocation.
type placement struct {
	kind  string
	alloc int
}

// placed reads a call's workspace_placed row into its node; the placement it returns is what
// the call's terminal row is read against (ended).
func (h *History) placed(row *journal.Row) placement {
	p := row.AsWorkspacePlaced()
	pl := placement{kind: p.Placement, alloc: p.Alloc}
	if p.Placement != "attempt" {
		return pl
	}
	nd := h.node(p.Node)
	nd.PlacedSeq = max(nd.PlacedSeq, row.Seq)
	if p.Alloc > nd.Alloc {
		nd.Alloc, nd.Path, nd.Start, nd.At, nd.Tree = p.Alloc, p.Workspace, p.Start, p.Start, ""
		if p.Commit != "" {
			nd.At = p.Commit
		}
	}
	if p.Alloc == nd.Alloc {
		nd.Open = true
	}
	return pl
}

// ended reads the terminal row of a call placed as pl ("" when it was not): an executor's tree.
func (h *History) ended(c *Call, pl placement, row *journal.Row) {
	if pl.kind != "attempt" {
		return
	}
	nd := h.node(c.Node)
	if pl.alloc == nd.Alloc {
		if row.Tree != "" {
			nd.Tree = row.Tree
		}
		nd.Open = false
	}
}

func (h *History) node(name string) *Node {
	nd := h.Nodes[name]
	if nd == nil {
		nd = &Node{Name: name}
		h.Nodes[name] = nd
	}
	return nd
}
