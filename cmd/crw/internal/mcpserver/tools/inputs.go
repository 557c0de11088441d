package tools

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/errs"
)

// The tools' inputs. An optional member is omitted to take its default, the command line's.

type runArg struct {
	Run string `json:"run" jsonschema:"the run: its id as start answered it (20261130-052301-a1b2c3), a unique prefix of the id or of its random part, or last (the newest run)"`
}

// RunID is the run the input names.
func (r *runArg) RunID() string { return r.Run }

// SetRunID names the run by its id.
func (r *runArg) SetRunID(id string) { r.Run = id }

type keyArg struct {
	RequestKey string `json:"request_key" jsonschema:"a key of yours for this request, 1 to 256 bytes: the same key with the same arguments answers the first result again and does nothing twice; the same key with other arguments is idempotency_conflict"`
}

// Key is the request key.
func (k *keyArg) Key() string { return k.RequestKey }

// StartIn is what start takes: crw flow start's flags.
type StartIn struct {
	keyArg
	Workflow          string          `json:"workflow" jsonschema:"the workflow file (.js or .ts); a relative path is from the server's working directory"`
	Input             json.RawMessage `json:"input,omitempty" jsonschema:"the workflow's input, any JSON value (default null)"`
	Backend           string          `json:"backend,omitempty" jsonschema:"where turns run: session (the default, as crw flow start), fake (offline, scripted by answers) or app-server (real Codex turns)"`
	Answers           string          `json:"answers,omitempty" jsonschema:"the fake backend's answers file"`
	Codex             string          `json:"codex,omitempty" jsonschema:"the codex binary of the app-server backend and of a session run's private app server (default $CRW_CODEX, else codex on PATH)"`
	Owner             string          `json:"owner,omitempty" jsonschema:"a session run's owner thread (default the server's $CODEX_THREAD_ID)"`
	Host              string          `json:"host,omitempty" jsonschema:"a session run's owner app server socket, unix:///abs/path (default a private app server)"`
	LostAfter         string          `json:"lost_after,omitempty" jsonschema:"session: how long a gone subagent's turn may stand still before its attempt is lost (default 10m)"`
	Poll              string          `json:"poll,omitempty" jsonschema:"session: how often the run reads its inbox and the host (default 250ms)"`
	Wake              string          `json:"wake,omitempty" jsonschema:"session: on (default) wakes the owner when steps wait; off for an owner that polls next"`
	WakeAfter         string          `json:"wake_after,omitempty" jsonschema:"session: how long steps wait before the owner is woken again (default 15m, doubling)"`
	RenotifyMax       string          `json:"renotify_max,omitempty" jsonschema:"session: the longest interval between wakes (default 1h)"`
	UnresponsiveAfter string          `json:"unresponsive_after,omitempty" jsonschema:"session: how long steps wait before the session_unresponsive escalation (default 2h)"`
	Roles             string          `json:"roles,omitempty" jsonschema:"a role table file: each role's model and effort"`
	Pool              *int            `json:"pool,omitempty" jsonschema:"at most this many calls in flight (default 4)"`
	BudgetTokens      int64           `json:"budget_tokens,omitempty" jsonschema:"calls that would start once the run has spent this many tokens end held budget_exhausted (default 0: none); crw flow's --budget-tokens, as the run's messages name it"`
	Lib               []string        `json:"lib,omitempty" jsonschema:"folders served as crw:lib/<path>"`
	PathLimits
	MaxLogMiB      *int64   `json:"max_log_mib,omitempty" jsonschema:"MiB the run's log may take; past it the workflow's lines are dropped and counted (default 64, at most 1024); crw flow's --max-log, as the run's messages name it"`
	Deadline       string   `json:"deadline,omitempty" jsonschema:"how long each process of the run may run it, a Go duration (default none; 0s is none too); crw flow's --deadline, as the run's messages name it"`
	Repo           string   `json:"repo,omitempty" jsonschema:"the git checkout the run's calls work in (default the one around the server's working directory); crw flow's --repo, as the run's messages name it"`
	NoRepo         bool     `json:"no_repo,omitempty" jsonschema:"run without a repository"`
	Head           string   `json:"head,omitempty" jsonschema:"the ref the run's worktrees start from (default HEAD)"`
	RepoURL        string   `json:"repo_url,omitempty" jsonschema:"a clone URL where the run keeps its head and moves its refs first: a host without the repository clones it from there"`
	KeepWorktrees  bool     `json:"keep_worktrees,omitempty" jsonschema:"leave the run's worktrees in place when it ends"`
	TraceIsolation bool     `json:"trace_isolation,omitempty" jsonschema:"digest each call's directory around every turn and warn when a call wrote where it should not"`
	TierSteps      string   `json:"tier_steps,omitempty" jsonschema:"auto (default): crw.tierStep moves a node up at once; ask: it waits for the owner's decision; crw flow's --tier-steps, as the run's messages name it"`
	ToolEnv        []string `json:"tool_env,omitempty" jsonschema:"entries NAME=VALUE: variables every command of the run's agents takes, named in each turn's tools section"`
	ToolPath       []string `json:"tool_path,omitempty" jsonschema:"directories of tools the run's agents' commands find before the shell's PATH"`
}

// backendOptions are the backends' options start was given, by their names: each member that
// Args names the argument of a backend's option.
func (in *StartIn) backendOptions() map[string]string {
	data, _ := json.Marshal(in)
	var args map[string]any
	_ = json.Unmarshal(data, &args)
	set := map[string]string{}
	for field, arg := range Args {
		if name, ok := strings.CutPrefix(field, backend.OptionField("")); ok {
			if v, _ := args[arg].(string); v != "" {
				set[name] = v
			}
		}
	}
	return set
}

// Args are the arguments of the tools the fields the engine's errors name are given as
// (errs.FieldError; engine.Fields and ops.Fields list them), the one table of them: an error
// about a field names its argument (Named).
var Args = map[string]string{
	"workflow":                        "workflow",
	"input":                           "input",
	"backend":                         "backend",
	"pool":                            "pool",
	"budget_tokens":                   "budget_tokens",
	"lib_dirs":                        "lib",
	"limits.stack_depth":              "max_stack_depth",
	"limits.heap_bytes":               "max_heap_mib",
	"limits.load_time":                "max_load_time",
	"limits.deadline":                 "deadline",
	"limits.prompt_bytes":             "max_prompt_kib",
	"limits.log_bytes":                "max_log_mib",
	"tier_steps":                      "tier_steps",
	"tool_env":                        "tool_env",
	"tool_path":                       "tool_path",
	"repo":                            "repo",
	"head":                            "head",
	"repo_url":                        "repo_url",
	"no_repo":                         "no_repo",
	"backend_opts.answers":            "answers",
	"backend_opts.codex":              "codex",
	"backend_opts.owner":              "owner",
	"backend_opts.host":               "host",
	"backend_opts.lost-after":         "lost_after",
	"backend_opts.poll":               "poll",
	"backend_opts.wake":               "wake",
	"backend_opts.wake-after":         "wake_after",
	"backend_opts.renotify-max":       "renotify_max",
	"backend_opts.unresponsive-after": "unresponsive_after",
	"verdict":                         "verdict",
	"output":                          "output",
	"value":                           "value",
	"limit":                           "limit",
	"script":                          "script",
	"run":                             "run",
	"trace":                           "trace",
}

// Named is err with the field it is about (errs.FieldError) named by its argument.
func Named(err error) error {
	return errs.Named(err, func(field string) string { return Args[field] })
}

// RunIn names a run: status and inspect.
type RunIn struct {
	runArg
}

// NextIn is what next takes.
type NextIn struct {
	runArg
	WaitSeconds *float64 `json:"wait_seconds,omitempty" jsonschema:"wait up to this long for a step or a change of the run's state (default 0)"`
}

// DispatchedIn is what dispatched takes.
type DispatchedIn struct {
	keyArg
	runArg
	Call        string   `json:"call" jsonschema:"the step's call (e.g. c3)"`
	Agent       string   `json:"agent" jsonschema:"the subagent's id: the agent_id spawn_agent returned, or the target of a send_input"`
	K           *int     `json:"k,omitempty" jsonschema:"the step's turn: 1 the task (default), 2 the repair"`
	Attempt     *int     `json:"attempt,omitempty" jsonschema:"the step's attempt (default 1)"`
	WaitSeconds *float64 `json:"wait_seconds,omitempty" jsonschema:"how long to wait for the run's reply (default 120)"`
}

// AnswerIn is what answer takes.
type AnswerIn struct {
	keyArg
	runArg
	Decision string          `json:"decision" jsonschema:"the decision's id, as status lists it"`
	Value    json.RawMessage `json:"value" jsonschema:"the answer, any JSON value that satisfies the decision's schema"`
	NoResume bool            `json:"no_resume,omitempty" jsonschema:"journal the answer and start nothing (default false: the run resumes in a process of its own)"`
}

// CancelIn is what cancel takes.
type CancelIn struct {
	keyArg
	runArg
	WaitSeconds *float64 `json:"wait_seconds,omitempty" jsonschema:"how long to wait for a live run to end (default 30)"`
}

// ResumeIn is what resume takes.
type ResumeIn struct {
	keyArg
	runArg
	Script  string `json:"script,omitempty" jsonschema:"go on with this edited workflow: it must replay the journal as recorded (default the run's own)"`
	Answers string `json:"answers,omitempty" jsonschema:"a run on the fake backend: go on with this answers file (default the run's own)"`
}

// ListIn is what effects and audit take.
type ListIn struct {
	Run   string `json:"run,omitempty" jsonschema:"one run's, named as the run of status is (default every run's)"`
	Limit *int   `json:"limit,omitempty" jsonschema:"at most this many, the newest (default: effects 100, audit 50)"`
}

// RunID is the run the input names.
func (l *ListIn) RunID() string { return l.Run }

// SetRunID names the run by its id.
func (l *ListIn) SetRunID(id string) { l.Run = id }

// RecoverIn is what recover takes.
type RecoverIn struct {
	keyArg
	runArg
	Call     string          `json:"call" jsonschema:"the call whose outcome is unknown (effects lists them)"`
	Verdict  string          `json:"verdict" jsonschema:"applied: the effect happened; not_applied: it did not (only a proven not_applied lets the node's next call send again)"`
	Output   json.RawMessage `json:"output,omitempty" jsonschema:"with applied: what the call answered, any JSON value"`
	NoResume bool            `json:"no_resume,omitempty" jsonschema:"journal the verdict and start nothing (default false: a run whose workflow waits for the verdict resumes in a process of its own)"`
}

// PathLimits are the limits that decide the path a workflow takes: start's, and those of a
// trace's shadow (a trace records none; a run's shadow runs within the run's).
type PathLimits struct {
	MaxStackDepth *int   `json:"max_stack_depth,omitempty" jsonschema:"the deepest call stack the workflow may have (default 10000, at most 100000)"`
	MaxHeapMiB    *int64 `json:"max_heap_mib,omitempty" jsonschema:"MiB of heap the workflow may hold (default 2048)"`
	MaxPromptKiB  *int64 `json:"max_prompt_kib,omitempty" jsonschema:"KiB one call's prompt may take (default 4096, at most 65536); crw flow's --max-prompt, as the run's messages name it"`
	MaxLoadTime   string `json:"max_load_time,omitempty" jsonschema:"how long the workflow's modules may take to load, a Go duration (default 30s)"`
}

// ShadowIn is what shadow takes.
type ShadowIn struct {
	Script string   `json:"script" jsonschema:"the workflow file to replay, changed or not"`
	Run    string   `json:"run,omitempty" jsonschema:"a recorded run of the state folder, named as the run of status is (give run or trace)"`
	Trace  string   `json:"trace,omitempty" jsonschema:"a trace file written by crw flow trace (give run or trace)"`
	Lib    []string `json:"lib,omitempty" jsonschema:"folders served as crw:lib/<path>"`
	PathLimits
	NoRepo bool `json:"no_repo,omitempty" jsonschema:"a trace's run had no repository: crw.commit throws as it did there (a run's shadow knows)"`
}

// RunID is the run the input names.
func (s *ShadowIn) RunID() string { return s.Run }

// SetRunID names the run by its id.
func (s *ShadowIn) SetRunID(id string) { s.Run = id }

// seconds is a wait given in seconds, its default when absent.
func seconds(v *float64, def time.Duration) time.Duration {
	if v == nil {
		return def
	}
	return time.Duration(*v * float64(time.Second))
}

// limits are the run's limits start was given, in the engine's units: each nil when its member
// is absent (the engine's default), a member that is not a duration refused. The engine checks
// their bounds.
func (in *StartIn) limits() (engine.CreateLimits, error) {
	l, err := in.PathLimits.limits()
	if err != nil {
		return l, err
	}
	l.LogBytes = scaled(in.MaxLogMiB, 20)
	l.Deadline, err = duration("deadline", in.Deadline)
	return l, err
}

// limits are the limits given, in the engine's units, as StartIn's are.
func (in *PathLimits) limits() (engine.CreateLimits, error) {
	l := engine.CreateLimits{StackDepth: in.MaxStackDepth, HeapBytes: scaled(in.MaxHeapMiB, 20),
		PromptBytes: scaled(in.MaxPromptKiB, 10)}
	var err error
	l.LoadTime, err = duration("max_load_time", in.MaxLoadTime)
	return l, err
}

// scaled is *v << shift (MiB or KiB to bytes); nil when v is. The input schema bounds v.
func scaled(v *int64, shift uint) *int64 {
	if v == nil {
		return nil
	}
	out := *v << shift
	return &out
}

// duration reads a Go duration member; nil when it is absent ("").
func duration(name, v string) (*time.Duration, error) {
	if v == "" {
		return nil, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return nil, errs.New(errs.InvalidRequest, "%s: %q is not a duration (30s, 2m)", name, v)
	}
	return &d, nil
}

func intOr(v *int, def int) int {
	if v == nil {
		return def
	}
	return *v
}

// maxWaitSeconds bounds a wait_seconds, as the command line bounds a --wait in seconds.
const maxWaitSeconds = 24 * 60 * 60

// waitBounds gives a wait_seconds member its bounds.
func waitBounds(s map[string]any) {
	p := property(s, "wait_seconds")
	p["minimum"], p["maximum"] = 0, maxWaitSeconds
}

// RunsIn is what list takes: crw flow list's flags.
type RunsIn struct {
	Status []string `json:"status,omitempty" jsonschema:"keep the runs of these statuses (how a run's last process ended it) or states (default every run)"`
	Limit  *int     `json:"limit,omitempty" jsonschema:"at most this many runs, the newest (default 100)"`
	Before string   `json:"before,omitempty" jsonschema:"the runs older than this one only: the next of the page before"`
}

// ShowIn is what show takes: crw flow show RUN [CALL].
type ShowIn struct {
	runArg
	Call   string `json:"call,omitempty" jsonschema:"one call (c3), with its prompt and answer (default every call, without them)"`
	Offset *int   `json:"offset,omitempty" jsonschema:"without call: skip this many calls, in the order the workflow made them (default 0; next_offset of the page before)"`
	Limit  *int   `json:"limit,omitempty" jsonschema:"without call: at most this many calls (default 100)"`
}

// LogsIn is what logs takes: crw flow logs RUN, a page at a time.
type LogsIn struct {
	runArg
	Offset *int64 `json:"offset,omitempty" jsonschema:"the byte offset of the log to read from (default 0, its start; next_offset of the page before)"`
	Tail   *int   `json:"tail,omitempty" jsonschema:"the log's last this many lines instead (not with offset)"`
	Limit  *int   `json:"limit,omitempty" jsonschema:"at most this many lines (default 200)"`
}

// TraceIn is what trace takes: crw flow trace RUN, a page of rows at a time.
type TraceIn struct {
	runArg
	After *uint64 `json:"after,omitempty" jsonschema:"the rows after this seq (default 0: from the first; next of the page before)"`
	Limit *int    `json:"limit,omitempty" jsonschema:"at most this many rows (default 100)"`
}

// CapabilitiesIn is what capabilities takes: nothing.
type CapabilitiesIn struct{}
