package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// Violation is an invariant a run of a case broke.
type Violation struct {
	Invariant string `json:"invariant"`
	Detail    string `json:"detail"`
}

func (v Violation) String() string { return v.Invariant + ": " + v.Detail }

// Outcome is what one run of a case came to.
type Outcome struct {
	Run string
	// End is how the run ended (nil when it did not).
	End        *store.Status
	Rows       []journal.Row
	Processes  int
	Crashes    int
	Actions    []string
	Violations []Violation
}

// Report is a case's two runs and what they broke.
type Report struct {
	Case       *Case
	Reference  *Outcome
	Faulty     *Outcome
	Violations []Violation
}

// Failed reports whether the case broke an invariant.
func (r *Report) Failed() bool { return len(r.Violations) > 0 }

// maxProcesses bounds the processes one run of a case may take: a run that has not ended by
// then is stuck.
const maxProcesses = 40

// runTimeout bounds one process of a run: far past what a process takes (seconds), so that only
// a hang reaches it, also on a machine loaded by other work (at 20 s, a seed of 12 calls on a
// repository of 800 files reached it beside a loaded test suite, and ran in 11 s alone).
const runTimeout = 90 * time.Second

// RunCase runs a case with its faults and without, under dir (a folder of its own), and checks
// the invariants.
func RunCase(ctx context.Context, c *Case, dir string) *Report {
	return RunCaseOn(ctx, c, dir, MemStore)
}

// Store is a store the simulator runs a case on: a Store with the fault of a process killed
// right after a commit.
type Store interface {
	store.Store
	// CrashAfterCommit makes the next holder of run lose its holding right after its nth
	// commit, as a process killed there would, the run free at once for the next.
	CrashAfterCommit(run string, n uint64)
}

// MachineRestarter is a Store that plays a machine's restart after a process's crash
// (store/local: its journal's file is written without an fsync and recovered from its log).
type MachineRestarter interface {
	// RestartMachine plays the restart on run's journal; torn is whether its file may have
	// lost writes (its last writer did not close it).
	RestartMachine(run string, tear uint64) (torn bool, err error)
	// KillNextRecovery makes the next recovery of run's journal from its log (the open to
	// write after the restart) stop at step ("kept": the torn file kept aside; "renamed": the
	// file made again in place, before the log says so), as its process killed there would.
	KillNextRecovery(run, step string)
}

// MemStore is the store the simulator runs on unless told otherwise: store/mem, its host's
// folder dir.
func MemStore(dir string) (Store, error) {
	st := mem.New()
	st.Dir = dir
	return st, nil
}

// RunCaseOn is RunCase with each execution's store made by stores (given the folder of its
// host's files: worktrees, backend files).
func RunCaseOn(ctx context.Context, c *Case, dir string, stores func(dir string) (Store, error)) *Report {
	rep := &Report{Case: c}
	rep.Reference = execCase(ctx, c, filepath.Join(dir, "reference"), false, stores)
	rep.Faulty = execCase(ctx, c, filepath.Join(dir, "faulty"), true, stores)
	for _, v := range rep.Reference.Violations {
		rep.Violations = append(rep.Violations, Violation{"reference:" + v.Invariant, v.Detail})
	}
	rep.Violations = append(rep.Violations, rep.Faulty.Violations...)
	if v := sameEnd(c, rep.Reference, rep.Faulty); v != nil {
		rep.Violations = append(rep.Violations, *v)
	}
	return rep
}

// execution is one run of a case in progress.
type execution struct {
	c      *Case
	faulty bool
	dir    string
	wf     string
	repo   string
	st     Store
	svc    *engine.Service
	host   *fake.Host
	out    *Outcome
	// answers is the file the run's processes answer from now: the case's, then its healed
	// ones once a pause was resumed.
	answers string
	healed  bool
}

func (x *execution) violate(invariant, format string, args ...any) {
	x.out.Violations = append(x.out.Violations, Violation{invariant, fmt.Sprintf(format, args...)})
}

func execCase(ctx context.Context, c *Case, dir string, faulty bool, stores func(string) (Store, error)) *Outcome {
	x := &execution{c: c, faulty: faulty, dir: dir, out: &Outcome{}, host: fake.NewHost("")}
	if err := x.prepare(stores); err != nil {
		x.violate("setup", "%v", err)
		return x.out
	}
	opts := engine.CreateOptions{Workflow: x.wf, Pool: &c.Pool, Repo: x.repo}
	if faulty {
		opts.BudgetTokens = c.Faults.Budget
	}
	if c.TierAsk {
		opts.TierSteps = "ask"
	}
	opts.BackendOpts = map[string]string{"answers": x.answers}
	id, err := x.svc.Create(ctx, opts)
	if err != nil {
		x.violate("setup", "create: %v", err)
		return x.out
	}
	x.out.Run = id
	x.drive(ctx, id)
	return x.out
}

// prepare writes the workflow, the answers files and the repository.
func (x *execution) prepare(stores func(string) (Store, error)) error {
	if err := os.MkdirAll(x.dir, 0o700); err != nil {
		return err
	}
	x.wf = filepath.Join(x.dir, "workflow.js")
	if err := os.WriteFile(x.wf, []byte(x.c.Program.JS()), 0o600); err != nil {
		return err
	}
	x.answers = filepath.Join(x.dir, "answers.json")
	if !x.faulty {
		// The reference never pauses: its answers are the healed ones from the start.
		if err := os.WriteFile(x.answers, AnswersFile(x.c.Healed()), 0o600); err != nil {
			return err
		}
	} else if err := os.WriteFile(x.answers, AnswersFile(x.c.Answers), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(x.dir, "healed.json"), AnswersFile(x.c.Healed()), 0o600); err != nil {
		return err
	}
	if x.c.Repo {
		x.repo = filepath.Join(x.dir, "repo")
		if err := makeRepo(x.repo, x.c.RepoFiles); err != nil {
			return err
		}
	}
	st, err := stores(filepath.Join(x.dir, "state"))
	if err != nil {
		return err
	}
	x.st = st
	x.svc = &engine.Service{Store: x.st, Backends: backend.NewRegistry(fake.Descriptor()), ReplayBudget: x.c.ReplayBudget}
	return nil
}

// makeRepo makes a scratch repository of one commit, with extra files besides its two.
func makeRepo(dir string, extra int) error {
	files := map[string]string{"README.md": "# scratch\n", "src/main.txt": "main\n"}
	for i := 0; i < extra; i++ {
		files[fmt.Sprintf("lib/d%02d/f%04d.txt", i%30, i)] = fmt.Sprintf("file %d of the scratch repository\n", i)
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=sim", "-c", "user.email=sim@localhost", "commit", "-q", "-m", "first"}} {
		if _, err := gitOut(dir, args...); err != nil {
			return err
		}
	}
	return nil
}

func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// drive runs the run's processes, one after another, acting between them as the run's
// inspection says, until it ends or is stuck.
func (x *execution) drive(ctx context.Context, id string) {
	if !x.checkQueued(ctx, id) {
		return
	}
	var last string // what the previous look at the run said, to see it move on
	for p := 0; p < maxProcesses; p++ {
		x.out.Processes++
		end, err, hung := x.process(ctx, id, p)
		x.checkJournal(ctx, id)
		if hung {
			x.violate("ends", "process %d of the run did not end within %v", p+1, runTimeout)
			return
		}
		if x.restarted(ctx, id, p) {
			last = "restarted"
			continue
		}
		st, serr := x.svc.Status(ctx, id)
		if serr != nil {
			x.violate("status_reads", "%v", serr)
			return
		}
		if last == "restarted" && endedRefusal(err) {
			// The crashed process had ended the run: the resume its status named after the
			// restart recovered the journal and had nothing to run. The status says so now.
			if st.State != store.StateEnded {
				x.violate("restart_unrecovered", "a resume after the restart said the run had ended, and its status says %s", st.State)
			}
			x.out.End = st
			x.finished(ctx, id)
			return
		}
		x.checkEnd(ctx, id, end, err, st)
		if st.State == store.StateEnded {
			x.out.End = st
			x.finished(ctx, id)
			return
		}
		if x.faulty && x.c.Faults.CancelAfter > 0 && x.out.Processes >= x.c.Faults.CancelAfter {
			x.out.Actions = append(x.out.Actions, "cancel")
			end, err := x.svc.Cancel(ctx, id, 0)
			if err != nil {
				x.violate("cancel_ends", "crw flow cancel of a %s run: %v", st.State, err)
				return
			}
			if end.State != store.StateEnded || end.Status != store.RunCancelled {
				x.violate("cancel_ends", "crw flow cancel left the run %s/%s", end.State, end.Status)
			}
			x.checkJournal(ctx, id)
			x.out.End = end
			x.finished(ctx, id)
			return
		}
		if x.faulty && x.c.Faults.Abandon && st.State == store.StateCrashed {
			x.abandon(ctx, id)
			return
		}
		look := x.act(ctx, id, st)
		if look == "" {
			return
		}
		if look == last && st.State != store.StateCrashed && st.State != store.StateQueued {
			x.violate("moves_on", "the run is %s again after the action its inspection named (%s): no command leads on", st.State, look)
			return
		}
		last = look
	}
	x.violate("ends", "the run did not end after %d processes", maxProcesses)
}

// restarted plays the machine's restart the case has after process p's crash, where the store
// plays one, and checks what readers say of the run then: it cannot be read until a resume
// recovers its journal, and they say to resume it. It reports whether the next process is that
// resume; half of the restarts are recovered instead by the operator's next command, whatever
// it is (engine.Service.ActingStatus), and the run read and acted on as after any crash.
func (x *execution) restarted(ctx context.Context, id string, p int) bool {
	f := x.c.Faults
	restarter, ok := x.st.(MachineRestarter)
	if !x.faulty || !ok || p >= len(f.Restarts) || f.Restarts[p] == 0 || p >= len(f.Crashes) || f.Crashes[p] == 0 {
		return false
	}
	torn, err := restarter.RestartMachine(id, f.Restarts[p])
	if err != nil {
		x.violate("restart", "the machine's restart could not be played: %v", err)
		return false
	}
	if !torn {
		// The process closed the journal (it ended before its crash came, or was stopped):
		// its file was fsync'd, nothing was lost, and nothing changes for readers.
		x.out.Actions = append(x.out.Actions, "restart (closed)")
		return false
	}
	x.out.Actions = append(x.out.Actions, "restart")
	_, err = x.svc.Status(ctx, id)
	switch {
	case err == nil:
		x.violate("restart_unrecovered", "after the machine's restart the run's status reads its journal's file, which may be torn")
	case !unrecoveredSaid(err, id):
		x.violate("restart_unrecovered", "after the machine's restart the run's status says %v, not to resume it", err)
	}
	if step := recoveryKill(f.Restarts[p]); step != "" {
		// The first command that recovers it is killed midway: what it left must still read
		// as waiting for the recovery, which the next command makes.
		x.out.Actions = append(x.out.Actions, "restart-recovery-killed")
		restarter.KillNextRecovery(id, step)
		if _, err := x.svc.ActingStatus(ctx, id); err == nil {
			x.violate("restart_unrecovered", "a recovery killed at its step %q went through", step)
		}
		if _, err := x.svc.Status(ctx, id); !unrecoveredSaid(err, id) {
			x.violate("restart_unrecovered", "after a recovery killed at its step %q the run's status says %v, not to resume it", step, err)
		}
	}
	if f.Restarts[p]&8 == 0 {
		return true // the operator resumes it, as its status says
	}
	// The operator acts on it otherwise (a cancel, an answer, a verdict, a resume with a
	// change), which recovers the journal first; then the run is read and acted on as ever.
	x.out.Actions = append(x.out.Actions, "restart-recovered-by-acting")
	if _, err := x.svc.ActingStatus(ctx, id); err != nil {
		x.violate("restart_unrecovered", "a command acting on the run after the machine's restart: %v", err)
	}
	return false
}

// unrecoveredSaid is whether err is what a reader says of a journal waiting for its recovery:
// run_unavailable, journal_unrecovered, naming the resume of run.
func unrecoveredSaid(err error, run string) bool {
	var e *errs.Error
	return errors.As(err, &e) && e.Code == errs.RunUnavailable && e.Reason() == "journal_unrecovered" &&
		strings.Contains(e.Diagnostic.NextAction, "crw flow resume "+run)
}

// process executes one process of the run: with its fault, in the faulty run.
func (x *execution) process(ctx context.Context, id string, p int) (end *store.Status, err error, hung bool) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	stopAt := 0
	if x.faulty {
		if p < len(x.c.Faults.Crashes) && x.c.Faults.Crashes[p] > 0 {
			x.st.CrashAfterCommit(id, x.c.Faults.Crashes[p])
		}
		if p < len(x.c.Faults.Stops) {
			stopAt = x.c.Faults.Stops[p]
		}
	}
	answers, err := fake.LoadAnswers(x.answers)
	if err != nil {
		return nil, err, false
	}
	var events atomic.Int64
	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	var once sync.Once
	opts := engine.ExecOptions{Backend: fake.New(answers, x.host), OnEvent: func(progress.Event) {
		if stopAt > 0 && events.Add(1) >= int64(stopAt) {
			once.Do(stop)
		}
	}}
	end, err = x.svc.Execute(stopCtx, id, opts)
	return end, err, ctx.Err() != nil
}

// checkQueued checks the run as it was created, before any process took it: it is queued, and
// its inspection says how a process takes it.
func (x *execution) checkQueued(ctx context.Context, id string) bool {
	st, err := x.svc.Status(ctx, id)
	if err != nil {
		x.violate("status_reads", "%v", err)
		return false
	}
	if st.State != store.StateQueued {
		x.violate("queued", "a run no process has taken is %s, not queued", st.State)
		return false
	}
	in, err := x.svc.Inspect(ctx, id)
	if err != nil {
		x.violate("inspect_reads", "%v", err)
		return false
	}
	if !mentions(in.Next, "crw flow resume "+id) {
		x.violate("next_action", "a queued run's inspection does not say to resume it: %q", in.Next)
		return false
	}
	return true
}

// act does what the run's inspection says to do next, as an operator would; it returns what it
// saw (the state and what it acted on), "" when it could not act.
func (x *execution) act(ctx context.Context, id string, st *store.Status) string {
	in, err := x.svc.Inspect(ctx, id)
	if err != nil {
		x.violate("inspect_reads", "%v", err)
		return ""
	}
	look := string(st.State)
	switch st.State {
	case store.StateCrashed, store.StateQueued:
		if st.State == store.StateCrashed {
			x.out.Crashes++
		}
		if !mentions(in.Next, "crw flow resume "+id) {
			x.violate("next_action", "a %s run's inspection does not say to resume it: %q", st.State, in.Next)
			return ""
		}
		x.out.Actions = append(x.out.Actions, "resume ("+look+")")
		return look
	case store.StatePaused, store.StateWaitingDecision:
	default:
		x.violate("state", "no process holds the run, yet it is %s", st.State)
		return ""
	}
	acted := false
	for _, d := range st.Decisions {
		look += " " + d.ID
		if call, ok := strings.CutPrefix(d.ID, decisions.EffectPrefix); ok {
			if !mentions(in.Next, "crw flow recover "+id+" "+call) {
				x.violate("next_action", "the run waits for the verdict on %s, and its inspection does not say how to give it: %q", call, in.Next)
				return ""
			}
			if !x.verdict(ctx, id, call) {
				return ""
			}
			acted = true
			continue
		}
		if !mentions(in.Next, "crw flow answer "+id+" "+d.ID) {
			x.violate("next_action", "the run waits for decision %s, and its inspection does not say how to answer it: %q", d.ID, in.Next)
			return ""
		}
		value := fmt.Sprintf(`{"go": %v, "note": null}`, x.c.Decisions[d.ID])
		if strings.HasPrefix(d.ID, "tier-step/") {
			value = `{"approve": true}`
		}
		x.out.Actions = append(x.out.Actions, "answer "+d.ID)
		if _, err := x.svc.Answer(ctx, id, d.ID, json.RawMessage(value), "sim", false); err != nil {
			x.violate("answer_taken", "crw flow answer %s %s: %v", id, d.ID, err)
			return ""
		}
		acted = true
	}
	if st.State == store.StatePaused {
		if !mentions(in.Next, "crw flow resume "+id) {
			x.violate("next_action", "a paused run's inspection does not say to resume it: %q", in.Next)
			return ""
		}
		change := engine.ResumeChange{}
		if !x.healed {
			// The limits have passed: the turns a pause held are answered now.
			x.healed, x.answers = true, filepath.Join(x.dir, "healed.json")
			change.Answers = x.answers
		}
		if x.c.Faults.Budget > 0 && x.faulty {
			none := int64(0)
			change.BudgetTokens = &none
		}
		x.out.Actions = append(x.out.Actions, "resume (paused)")
		if err := x.svc.ChangeResume(ctx, id, change, "sim"); err != nil {
			x.violate("resume_change", "crw flow resume %s with %+v: %v", id, change, err)
			return ""
		}
		return look + fmt.Sprintf(" healed=%v", x.healed)
	}
	if !acted {
		x.violate("next_action", "the run waits for a decision and lists none: %+v", st)
		return ""
	}
	return look
}

func mentions(next []string, command string) bool {
	for _, n := range next {
		if strings.Contains(n, command) {
			return true
		}
	}
	return false
}

// verdict gives the case's verdict on an unknown call: applied with an output its schema
// admits, or not_applied.
func (x *execution) verdict(ctx context.Context, id, call string) bool {
	rows, err := x.svc.Rows(ctx, id)
	if err != nil {
		x.violate("rows_read", "%v", err)
		return false
	}
	var prepared, end *journal.Row
	for i := range rows {
		r := &rows[i]
		switch {
		case r.Call == call && r.Type == journal.TypePrepared:
			prepared = r
		case r.Call == call && r.Type == journal.TypeOutcomeUnknown:
			end = r
		}
	}
	if prepared == nil || end == nil {
		x.violate("effect_listed", "the run waits for a verdict on %s, which did not end unknown", call)
		return false
	}
	v := decisions.Verdict{Verdict: decisions.VerdictNotApplied}
	if x.c.Verdicts[prepared.Index] {
		v.Verdict = decisions.VerdictApplied
		v.Output = json.RawMessage(`"applied"`)
		if len(end.Schema) > 0 {
			if doc, err := schema.Synthesize(end.Schema); err == nil {
				v.Output = doc
			}
		}
	}
	x.out.Actions = append(x.out.Actions, "recover "+call+" "+v.Verdict)
	if _, err := x.svc.Recover(ctx, id, call, v, "sim", false); err != nil {
		x.violate("verdict_taken", "crw flow recover %s %s --%s: %v", id, call, v.Verdict, err)
		return false
	}
	return true
}

// abandon deletes a run that crashed and was never resumed.
func (x *execution) abandon(ctx context.Context, id string) {
	x.out.Actions = append(x.out.Actions, "delete (crashed)")
	if err := x.svc.Delete(ctx, id, engine.DeleteOptions{}); err != nil {
		x.violate("delete_removes", "crw flow delete of a crashed run: %v", err)
		return
	}
	x.checkRepo(id, true)
}

// errOf is the error code and reason of a process's error.
func errOf(err error) (errs.Code, string) {
	e, ok := errs.As(err)
	if !ok {
		return "", err.Error()
	}
	return e.Code, e.Reason()
}

// endedRefusal is whether err is a resume's refusal of a run that has ended.
func endedRefusal(err error) bool {
	if err == nil {
		return false
	}
	code, _ := errOf(err)
	return code == errs.RunUnavailable && strings.Contains(err.Error(), "there is nothing to resume")
}

// expectedStop reports whether a process's error is one its fault explains: a crash (the lease
// lost) or a stop.
func expectedStop(err error) bool {
	if errors.Is(err, store.ErrLeaseLost) {
		return true
	}
	_, reason := errOf(err)
	return reason == "process_stopped" || reason == "lease_lost"
}
