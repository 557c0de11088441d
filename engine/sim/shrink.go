package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Shrink reduces a case that broke invariant to a smaller one that still breaks it: fewer
// statements, fewer calls in parallel, fewer faults, fewer scripted answers, earlier crashes.
// A candidate counts as failing when any of tries runs of it breaks the invariant (a violation
// may depend on timing). budget bounds the candidates tried.
func Shrink(ctx context.Context, c *Case, invariant string, dir string, tries, budget int) *Case {
	fails := func(cand *Case) bool {
		for i := 0; i < tries; i++ {
			if budget <= 0 || ctx.Err() != nil {
				return false
			}
			budget--
			rep := RunCase(ctx, cand, filepath.Join(dir, fmt.Sprintf("try-%d", budget)))
			_ = os.RemoveAll(filepath.Join(dir, fmt.Sprintf("try-%d", budget)))
			for _, v := range rep.Violations {
				if v.Invariant == invariant {
					return true
				}
			}
		}
		return false
	}
	best := c.clone()
	for progress := true; progress && budget > 0; {
		progress = false
		for _, cand := range best.candidates() {
			if fails(cand) {
				best, progress = cand, true
				break
			}
		}
	}
	return best
}

func (c *Case) clone() *Case {
	data, _ := json.Marshal(c)
	var out Case
	_ = json.Unmarshal(data, &out)
	return &out
}

// candidates are the cases one step smaller than c, the largest steps first.
func (c *Case) candidates() []*Case {
	var out []*Case
	// A statement less (with those that name its calls).
	for i := len(c.Program.Stmts) - 1; i >= 0; i-- {
		cand := c.clone()
		cand.Program.Stmts = withoutStmt(cand.Program.Stmts, i)
		out = append(out, cand)
	}
	// A call less in a parallel group or a race.
	for i, s := range c.Program.Stmts {
		if (s.Kind == KindAll || s.Kind == KindRace) && len(s.Calls) > 1 {
			for j := range s.Calls {
				cand := c.clone()
				st := &cand.Program.Stmts[i]
				gone := st.Calls[j].Var
				st.Calls = slices.Delete(st.Calls, j, j+1)
				if len(st.Calls) == 1 && st.Kind == KindAll {
					st.Kind = KindCall
				}
				cand.Program.Stmts = withoutUses(cand.Program.Stmts, gone)
				out = append(out, cand)
			}
		}
		if s.Kind == KindLoop && s.N > 1 {
			cand := c.clone()
			cand.Program.Stmts[i].N--
			out = append(out, cand)
		}
	}
	// A fault less, or a crash earlier.
	f := c.Faults
	for i := range f.Restarts {
		if f.Restarts[i] > 0 {
			cand := c.clone()
			cand.Faults.Restarts[i] = 0
			out = append(out, cand)
		}
	}
	for i := range f.Crashes {
		cand := c.clone()
		cand.Faults.Crashes = slices.Delete(cand.Faults.Crashes, i, i+1)
		if i < len(cand.Faults.Restarts) {
			cand.Faults.Restarts = slices.Delete(cand.Faults.Restarts, i, i+1)
		}
		out = append(out, cand)
		if f.Crashes[i] > 1 {
			cand := c.clone()
			cand.Faults.Crashes[i] /= 2
			out = append(out, cand)
		}
	}
	if c.RepoFiles > 0 {
		cand := c.clone()
		cand.RepoFiles = 0
		out = append(out, cand)
	}
	for i := range f.Stops {
		cand := c.clone()
		cand.Faults.Stops = slices.Delete(cand.Faults.Stops, i, i+1)
		out = append(out, cand)
	}
	for _, drop := range []func(*Faults){
		func(f *Faults) { f.Budget = 0 }, func(f *Faults) { f.CancelAfter = 0 }, func(f *Faults) { f.Abandon = false },
	} {
		cand := c.clone()
		drop(&cand.Faults)
		if cand.Faults.Budget != f.Budget || cand.Faults.CancelAfter != f.CancelAfter || cand.Faults.Abandon != f.Abandon {
			out = append(out, cand)
		}
	}
	// An answer less (synthesized instead), and simpler schemas.
	keys := make([]int, 0, len(c.Answers))
	for k := range c.Answers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		cand := c.clone()
		delete(cand.Answers, k)
		out = append(out, cand)
	}
	for i, s := range c.Program.Stmts {
		for j, call := range s.Calls {
			if call.Schema != "" && call.Schema != "inline:flag" {
				cand := c.clone()
				cand.Program.Stmts[i].Calls[j].Schema = "inline:flag"
				out = append(out, cand)
			}
		}
	}
	if c.Pool > 1 {
		cand := c.clone()
		cand.Pool = 1
		out = append(out, cand)
	}
	return out
}

// withoutStmt removes statement i and every later statement that names a call it defined.
func withoutStmt(stmts []Stmt, i int) []Stmt {
	gone := stmts[i].Calls
	out := slices.Delete(slices.Clone(stmts), i, i+1)
	for _, c := range gone {
		out = withoutUses(out, c.Var)
	}
	return out
}

// withoutUses removes the statements that name variable v, and those that name theirs.
func withoutUses(stmts []Stmt, v int) []Stmt {
	gone := map[int]bool{v: true}
	var out []Stmt
	for _, s := range stmts {
		if s.Of != 0 && gone[s.Of] {
			for _, c := range s.Calls {
				gone[c.Var] = true
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// Save writes a case as files a developer can run: the workflow, its answers (those the run
// starts with, and those it is resumed with once a pause is over), the case itself (what
// TestKeptCases replays) and a note of its faults and what it broke.
func Save(dir string, c *Case, rep *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	var note strings.Builder
	fmt.Fprintf(&note, "# Simulation case (seed %d)\n\n", c.Seed)
	fmt.Fprintf(&note, "    crw flow run workflow.js --answers answers.json --pool %d", c.Pool)
	if c.Repo {
		note.WriteString(" --repo REPO")
	}
	repo := ""
	if c.RepoFiles > 0 {
		repo = fmt.Sprintf("REPO holds %d files besides README.md and src/main.txt (lib/dNN/fNNNN.txt).\n\n", c.RepoFiles)
	}
	if c.TierAsk {
		note.WriteString(" --tier-steps ask")
	}
	if c.Faults.Budget > 0 {
		fmt.Fprintf(&note, " --budget-tokens %d", c.Faults.Budget)
	}
	note.WriteString("\n\n" + repo + "A paused run is resumed with `crw flow resume RUN --answers healed.json`.\n\n")
	fmt.Fprintf(&note, "Faults: %s\n", faultsText(c.Faults))
	if rep != nil {
		fmt.Fprintf(&note, "\nThe run with its faults did: %s\n", strings.Join(rep.Faulty.Actions, "; "))
		for _, v := range rep.Violations {
			fmt.Fprintf(&note, "\n- %s\n", v)
		}
	}
	for name, content := range map[string][]byte{
		"case.json": append(data, '\n'), "workflow.js": []byte(c.Program.JS()), "answers.json": append(AnswersFile(c.Answers), '\n'),
		"healed.json": append(AnswersFile(c.Healed()), '\n'), "README.md": []byte(note.String()),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func faultsText(f Faults) string {
	var parts []string
	for i, n := range f.Crashes {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("process %d crashes after journal commit %d", i+1, n))
		}
		if n > 0 && i < len(f.Restarts) && f.Restarts[i] > 0 {
			parts = append(parts, fmt.Sprintf("the machine restarts after it (on store/local: tear %d)", f.Restarts[i]))
			if step := recoveryKill(f.Restarts[i]); step != "" {
				parts = append(parts, fmt.Sprintf("its first recovery is killed at the rebuild's step %q", step))
			}
		}
	}
	for i, n := range f.Stops {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("process %d is stopped (a signal) after %d progress events", i+1, n))
		}
	}
	if f.Budget > 0 {
		parts = append(parts, fmt.Sprintf("a token budget of %d, lifted on resume", f.Budget))
	}
	if f.CancelAfter > 0 {
		parts = append(parts, fmt.Sprintf("cancelled once %d processes have ended", f.CancelAfter))
	}
	if f.Abandon {
		parts = append(parts, "deleted after its first crash")
	}
	if len(parts) == 0 {
		return "none beyond the answers"
	}
	return strings.Join(parts, "; ")
}

// Load reads a case a Save wrote.
func Load(dir string) (*Case, error) {
	data, err := os.ReadFile(filepath.Join(dir, "case.json"))
	if err != nil {
		return nil, err
	}
	var c Case
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, "case.json"), err)
	}
	return &c, nil
}
