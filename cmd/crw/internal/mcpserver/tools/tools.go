package tools

import (
	"context"
	"io"
	"slices"
	"time"

	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/runner/decisions"
	rtlimits "github.com/crw-dev/crw/runtime/limits"
	"github.com/crw-dev/crw/store"
)

// Every description ends with how failures answer, and each names what to do on its own.
const (
	onError = ` On a failure the answer is a tool error whose structured content has error: {code, message, detail, ` +
		`safe_response, run, diagnostic}: follow error.diagnostic.nextAction when there is one, else error.safe_response. ` +
		`invalid_request: correct the arguments from this tool's input schema (nothing was done). ` +
		`capability_unavailable: the capabilities tool says what this host lacks and how to get it.`
	onKey = ` request_key makes the call safe to retry: the same key with the same arguments answers the first ` +
		`result again and does nothing twice, across server restarts (the state folder keeps the newest 10,000 keys); ` +
		`the same key with other arguments is idempotency_conflict: send the original request, or a new key for new ` +
		`intent. A first call that ended invalid_request keeps no key.`
	onRun = ` invalid_request also for a run the state folder does not have (or that a prefix names more than one ` +
		`of). run_unavailable: the run cannot take this now (held by a live process, ended): read status or ` +
		`inspect and act on its state.`
)

// runs is what the tools work on: the run service, and this host (a session run's steps and
// its owner's binding are in its state folder).
type runs struct {
	svc  *engine.Service
	host ops.Host
}

// All is every tool on the run service svc and this host, in the order tools/list gives them;
// facts are the server's own, as capabilities tells them.
func All(svc *engine.Service, host ops.Host, backends *backend.Registry, facts Facts) []Tool {
	rs := &runs{svc: svc, host: host}
	var all []Tool
	names := func() []string {
		out := make([]string, len(all))
		for i, t := range all {
			out[i] = t.Name
		}
		slices.Sort(out)
		return out
	}
	all = slices.Concat(rs.runTools(backends), rs.controlTools(), rs.recoveryTools(), rs.browseTools(backends, facts, names))
	return all
}

// runTools are the tools that start a run and follow it: start, status, and a session
// run's next and dispatched.
func (rs *runs) runTools(backends *backend.Registry) []Tool {
	return []Tool{
		define(Tool{Name: "start", Title: "Start a workflow run", Payload: "run", Mutation: true,
			Description: `Start a workflow run in a process of its own, as crw flow start does, and answer once that ` +
				`process holds the run: {run, pid, state, warnings, preview}. The run goes on after the call; watch it ` +
				`with status (next for a session run's steps). backend: session (the default, as crw flow start: each ` +
				`call runs on a role subagent of the owner's Codex session), fake (offline, scripted by answers), or ` +
				`app-server (real Codex turns). Relative paths are from the server's working directory; runs live in ` +
				`the server's state folder.` + onError + ` A workflow that does not load, or an option another backend ` +
				`takes, is invalid_request. run_unavailable or capability_unavailable with error.run set: the run exists ` +
				`but its process did not come up: inspect it, then resume it.` + onKey,
			input: func(in map[string]any) {
				property(in, "backend")["enum"] = toAny(backends.Names())
				property(in, "tier_steps")["enum"] = []any{"auto", "ask"}
				property(in, "wake")["enum"] = []any{"on", "off"}
				property(in, "pool")["minimum"] = 1
				property(in, "budget_tokens")["minimum"] = 0
				pathLimitBounds(in)
				p := property(in, "max_log_mib")
				p["minimum"], p["maximum"] = 1, store.MaxLogBytes>>20
			}}, rs.start),
		define(Tool{Name: "status", Title: "Where a run stands", Payload: "status",
			Description: `Where a run stands, as crw flow status says: its state (running; paused: a usage or rate ` +
				`limit paused it, resume it once the limit passed, or its token budget did: inspect says how it goes on; ` +
				`waiting_decision: answer the decisions listed, but ` +
				`one whose id starts effect/ is a verdict the workflow waits for (crw.effect): give it with recover; ` +
				`waiting_resume: the decisions it waited for are answered, resume it; ended, ` +
				`with its result or error; crashed: no process holds it and it has not ended, resume it; queued: no process ` +
				`has run it yet, a worker takes it or resume runs it), its calls by ` +
				`status, tokens, and the decisions it waits for. Reads only, and answers at once while a process holds the run.` +
				onError + onRun}, rs.status),
		define(Tool{Name: "next", Title: "A session run's steps for its owner", Payload: "next",
			Description: `What a session run asks of its owner thread, as crw flow next says: its state, each waiting ` +
				`step with the host call to make (spawn_agent, send_input or close_agent, with Codex's argument names) ` +
				`and how to report it (the dispatched tool), the subagent slots and a hint. Writes no row; a run no ` +
				`process holds that is neither paused nor over is resumed, as crw flow resume --detach does. ` +
				`wait_seconds waits for a step or a change of state (mind the client's own tool timeout).` + onError +
				` invalid_request for a run of another backend: it has no steps.` + onRun,
			input: waitBounds}, rs.next),
		define(Tool{Name: "dispatched", Title: "Report a step's subagent", Payload: "reply", Mutation: true,
			Description: `Report the subagent the owner started for a session run's step <call>/t<k>-a<attempt>, as crw ` +
				`flow dispatched does, and wait up to wait_seconds for the run's reply: bound (the run took it), ` +
				`pair_mismatch, retry, refused or close (each with what to do in detail), or queued (no process answered ` +
				`in time: the report waits in the run's inbox; next shows when the run goes on).` + onError + onRun + onKey,
			input: func(in map[string]any) {
				waitBounds(in)
				property(in, "k")["minimum"], property(in, "attempt")["minimum"] = 1, 1
			}}, rs.dispatched),
	}
}

// controlTools are the tools that move a run on: answer, cancel, resume.
func (rs *runs) controlTools() []Tool {
	return []Tool{
		define(Tool{Name: "answer", Title: "Answer a decision", Payload: "answer", Mutation: true,
			Description: `Answer a decision the run waits for (crw.decide), as crw flow answer does: the value is checked ` +
				`against the decision's schema and journaled, and the run resumes in a process of its own unless ` +
				`no_resume; a run whose process is live takes the answer itself. {run, decision, journaled, pid}.` + onError +
				` invalid_request also when the run asked no such decision, it was answered already, or the value does not ` +
				`satisfy its schema (nothing was written). run_env_unusable: make the run's recorded TMPDIR again and send ` +
				`the same request.` + onRun + onKey}, rs.answerDecision),
		define(Tool{Name: "cancel", Title: "Cancel a run", Payload: "status", Mutation: true, Destructive: true,
			Description: `End a run cancelled, as crw flow cancel does: a live run's process is asked to (its calls in ` +
				`flight end held cancelled) and waited for up to wait_seconds; a crashed or paused run is ended at once. ` +
				`Answers where the run stands then: state ended means it is cancelled; any other state means it had not ended ` +
				`within wait_seconds: read status later.` + onError + onRun + onKey,
			input: waitBounds}, rs.cancel),
		define(Tool{Name: "resume", Title: "Resume a run", Payload: "run", Mutation: true,
			Description: `Go on with a run whose process died, or that a usage or rate limit paused, in a process of its ` +
				`own, as crw flow resume --detach does: its journal is replayed (nothing the journal answered is sent ` +
				`again) and it goes on live; answers {run, pid, state} once the process holds the run. Watch it with status. ` +
				`script goes on with an edited workflow, which must replay the journal as recorded (else it is refused ` +
				`and nothing is written: shadow shows where it diverges); answers, for a fake-backend run, with another ` +
				`answers file; either is journaled and holds for the run's later processes.` +
				onError + onRun + ` revision_conflict ` +
				`(divergence): the workflow asks for other calls than the journal recorded: resume with the script it ` +
				`was recorded with; shadow shows what changed. run_env_unusable: make the run's recorded TMPDIR again.` + onKey}, rs.resume),
	}
}

// recoveryTools are the tools that diagnose a run and reconcile what is unknown:
// inspect, effects, audit, recover, shadow.
func (rs *runs) recoveryTools() []Tool {
	return []Tool{
		define(Tool{Name: "inspect", Title: "A run's diagnosis", Payload: "inspection",
			Description: `A run's diagnosis in one read, as crw flow inspect gives it: its status, the calls with no ` +
				`outcome yet, the nodes a call with an unknown outcome holds, its unresolved effects, the decisions it ` +
				`waits for, its log, its backend and host, and next: what moves it on, most pressing first. Reads only.` +
				onError + onRun}, rs.inspect),
		define(Tool{Name: "effects", Title: "Unresolved effects", Payload: "effects",
			Description: `The effects whose outcome is unknown, as crw flow effects lists them, across runs or of one: ` +
				`each call that ended unknown and commit whose result was not recorded, with what to verify and where ` +
				`(the host thread and turn, the ref) and the command that reconciles it. Verify independently, then ` +
				`recover. Reads only.` + onError + onRun,
			input: limits(1, 10000)}, rs.effects),
		define(Tool{Name: "audit", Title: "The mutations' history", Payload: "audit",
			Description: `The bounded history of mutations, as crw flow audit lists it (the commands' and this server's: ` +
				`start, resume, cancel, answer, recover, dispatched, ...): when, who (a Codex thread, a uid, or an MCP ` +
				`client) and how each ended (ok, or the error's code), oldest first, the newest limit of them. Reads only.` + onError,
			input: limits(1, 10000)}, rs.auditLog),
		define(Tool{Name: "recover", Title: "Reconcile an unknown effect", Payload: "reconciled", Mutation: true,
			Description: `The verdict on a call that ended unknown (reconcile_effect), as crw flow recover gives it: ` +
				`applied (it ran; output records what it answered) or not_applied (it did not: the node's next call may ` +
				`send again). Verify the effect in the host first (effects says where): only a proven not_applied lets ` +
				`an equivalent effect be retried. It is journaled, and releases the node's recovery hold for the calls ` +
				`after it once every unknown call of the node has one (held_by names the others); a live run's process ` +
				`takes it itself. A run whose workflow waits for the verdict (crw.effect) resumes in a process of its ` +
				`own (pid), unless no_resume; resume any other run no process holds afterwards.` + onError + ` invalid_request also for a call ` +
				`that did not end unknown, or that has a verdict already (nothing was written).` + onRun + onKey,
			input: func(in map[string]any) {
				property(in, "verdict")["enum"] = []any{decisions.VerdictApplied, decisions.VerdictNotApplied}
			}}, rs.recoverEffect),
		define(Tool{Name: "shadow", Title: "Replay a script against a recorded run", Payload: "report",
			Description: `Replay a script, changed or not, against a recorded run (a run of the state folder, or a trace ` +
				`file) with no backend at all, as crw flow shadow does, and report how it differs: calls matched, every ` +
				`divergence, recorded calls the script never made, new calls the record does not have (held in the ` +
				`shadow), and the script's result; differs is true when it made anything but exactly the recorded calls. ` +
				`A run's shadow runs within the limits the run recorded; a trace records none, and its shadow runs ` +
				`within the defaults or the max_ limits given, and a trace of a run without a repository is given ` +
				`no_repo. A commit, tier step or decision asked otherwise than the record has at its place stops ` +
				`the shadow where a resume stops (error revision_conflict/divergence). Sends nothing and writes nothing.` + onError + onRun,
			input: pathLimitBounds}, rs.shadowRun),
	}
}

// pathLimitBounds bounds the PathLimits of a tool's input schema in.
func pathLimitBounds(in map[string]any) {
	p := property(in, "max_stack_depth")
	p["minimum"], p["maximum"] = 1, rtlimits.MaxStackDepth
	p = property(in, "max_heap_mib")
	p["minimum"], p["maximum"] = 1, 1<<30
	p = property(in, "max_prompt_kib")
	p["minimum"], p["maximum"] = 1, store.MaxPromptBytes>>10
}

func limits(lo, hi int) func(map[string]any) {
	return func(in map[string]any) {
		p := property(in, "limit")
		p["minimum"], p["maximum"] = lo, hi
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func (rs *runs) start(ctx context.Context, c *Call, in *StartIn) (*Started, error) {
	limits, err := in.limits()
	if err != nil {
		return nil, err
	}
	backendName := in.Backend
	if backendName == "" {
		backendName = session.Name // as crw flow start
	}
	tierSteps := in.TierSteps
	if tierSteps == "" {
		tierSteps = "auto"
	}
	co, err := ops.CreateOptions(&ops.RunOptions{Workflow: in.Workflow, Input: in.Input, Backend: backendName, BackendOpts: in.backendOptions(),
		Roles: in.Roles, Pool: in.Pool, BudgetTokens: in.BudgetTokens, LibDirs: in.Lib, Limits: limits,
		Repo: in.Repo, NoRepo: in.NoRepo, Head: in.Head, RepoURL: in.RepoURL, KeepWorktrees: in.KeepWorktrees, TraceIsolation: in.TraceIsolation, TierSteps: tierSteps,
		ToolEnv: in.ToolEnv, ToolPath: in.ToolPath})
	if err != nil {
		return nil, err
	}
	started, err := ops.Start(ctx, rs.svc, rs.host, co, func(st *ops.Started) { c.Run = st.Run })
	if started != nil {
		c.Run = started.Run
	}
	if err != nil {
		return nil, err
	}
	return startedOf(started.Run, started.PID, started.Warnings, started.Preview), nil
}

func (rs *runs) status(ctx context.Context, c *Call, in *RunIn) (*Status, error) {
	st, err := rs.svc.Status(ctx, in.Run)
	if err != nil {
		return nil, err
	}
	return statusOf(st), nil
}

func (rs *runs) next(ctx context.Context, c *Call, in *NextIn) (*Next, error) {
	v, err := ops.Next(ctx, rs.svc, rs.host, in.Run, seconds(in.WaitSeconds, 0))
	if err != nil {
		return nil, err
	}
	return nextOf(v), nil
}

func (rs *runs) dispatched(ctx context.Context, c *Call, in *DispatchedIn) (*Reply, error) {
	report := bus.Report{Run: in.Run, Call: in.Call, Agent: in.Agent, K: intOr(in.K, 1), Attempt: intOr(in.Attempt, 1)}
	r, err := ops.Dispatched(ctx, rs.svc, rs.host, report, seconds(in.WaitSeconds, 120*time.Second))
	if err != nil {
		return nil, err
	}
	out := Reply(r)
	return &out, nil
}

func (rs *runs) answerDecision(ctx context.Context, c *Call, in *AnswerIn) (*Answered, error) {
	a, err := rs.svc.Answer(ctx, in.Run, in.Decision, in.Value, c.Who, !in.NoResume)
	if err != nil {
		return nil, err
	}
	out := Answered(*a)
	return &out, nil
}

func (rs *runs) cancel(ctx context.Context, c *Call, in *CancelIn) (*Status, error) {
	st, err := rs.svc.Cancel(ctx, in.Run, seconds(in.WaitSeconds, 30*time.Second))
	if err != nil {
		return nil, err
	}
	return statusOf(st), nil
}

func (rs *runs) resume(ctx context.Context, c *Call, in *ResumeIn) (*Started, error) {
	pid, err := ops.ResumeDetached(ctx, rs.svc, in.Run, engine.ResumeChange{Script: in.Script, Answers: in.Answers}, c.Who)
	if err != nil {
		return nil, err
	}
	return startedOf(in.Run, pid, nil, nil), nil
}

func (rs *runs) inspect(ctx context.Context, c *Call, in *RunIn) (*Inspection, error) {
	got, err := rs.svc.Inspect(ctx, in.Run)
	if err != nil {
		return nil, err
	}
	ops.HostState(rs.host, got)
	return inspectionOf(got), nil
}

func (rs *runs) effects(ctx context.Context, c *Call, in *ListIn) ([]Effect, error) {
	var runs []string
	if in.Run != "" {
		runs = append(runs, in.Run)
	}
	es, err := rs.svc.Effects(ctx, intOr(in.Limit, 100), runs...)
	if err != nil {
		return nil, err
	}
	return effectsOf(es), nil
}

func (rs *runs) auditLog(ctx context.Context, c *Call, in *ListIn) ([]AuditEntry, error) {
	es, err := rs.svc.AuditLog(ctx, in.Run, intOr(in.Limit, 50))
	if err != nil {
		return nil, err
	}
	return auditOf(es), nil
}

func (rs *runs) recoverEffect(ctx context.Context, c *Call, in *RecoverIn) (*Reconciled, error) {
	r, err := rs.svc.Recover(ctx, in.Run, in.Call, decisions.Verdict{Verdict: in.Verdict, Output: in.Output}, c.Who, !in.NoResume)
	if err != nil {
		return nil, err
	}
	return &Reconciled{Run: r.Run, Call: r.Call, Verdict: r.Verdict, Node: r.Node, HeldBy: append([]string{}, r.HeldBy...), Journaled: r.Journaled, PID: r.PID}, nil
}

func (rs *runs) shadowRun(ctx context.Context, c *Call, in *ShadowIn) (*Report, error) {
	limits, err := in.PathLimits.limits()
	if err != nil {
		return nil, err
	}
	r, err := ops.Shadow(ctx, rs.svc, ops.ShadowOptions{Script: in.Script, Run: in.Run, Trace: in.Trace, LibDirs: in.Lib,
		Limits: limits, NoRepo: in.NoRepo, Log: io.Discard})
	if err != nil {
		return nil, err
	}
	return reportOf(r), nil
}
