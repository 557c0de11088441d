// Package store is the contract between the engine and where runs live. A Store keeps each
// run's spec, its journal, the status its holder publishes, a stored cancel request, and what
// the session backend and the operator interface keep beside them: files by digest and small
// records (decisions, the session inbox and replies, an audit of mutations, idempotency keys).
//
// One process at a time holds a run, under an exclusive lease (Acquire). The lease can be
// lost (the run's folder removed, an etcd lease expired): its holder is told on Lost, and its
// journal is fenced, so it writes nothing more. Every other process reads the run's status and
// journal while it is held: nothing waits for the holder to let go.
//
// store/local (a folder per run: run.json, a bbolt journal, flock leases) is the default;
// store/mem keeps everything in memory for tests. docs/architecture.md maps the contract onto
// etcd as well.
package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crw-dev/crw/journal"
)

// Watcher is a store that tells when what a run's status is made of changes (its published
// status, its holder, its journal's summary), so that a follower looks again then rather than
// on a timer.
type Watcher interface {
	// Changes gives a value after each change of the run's status, several coalesced into one,
	// until ctx ends or the watch fails, when it is closed (the follower goes back to its
	// timer). It returns once the watch is in place: a look taken after it misses no change.
	Changes(ctx context.Context, run string) (<-chan struct{}, error)
}

// RunsWatcher is a store that tells when a run may have become free to take: a run was
// created, or a holder let one go (its process ended, or died and its lease expired), so that a
// worker looks for runs then rather than on a timer.
type RunsWatcher interface {
	// RunsChanged gives a value after each such change, several coalesced into one, until ctx
	// ends or the watch fails, when it is closed. It returns once the watch is in place.
	RunsChanged(ctx context.Context) (<-chan struct{}, error)
}

// Shared is a store whose runs a process of any host may execute (a cluster's): a run created
// on it keeps its code (Spec.CodeKept), so that it loads the same code wherever it goes on.
type Shared interface {
	Shared() bool
}

// Store is where runs live. Its methods are safe for concurrent use.
type Store interface {
	// Create records a new run: its spec, and an empty journal. A run that exists already is
	// ErrExists; nothing of a run is left behind when Create fails.
	Create(ctx context.Context, spec *Spec) error
	// Acquire takes a run's lease for this process, its journal open for writing. A run that
	// another process holds is run_unavailable (wrapping ErrHeld).
	Acquire(ctx context.Context, run string) (Lease, error)
	// Delete removes a run that no process holds, all of it. cleanup, when not nil, is called
	// first with the run's folder ("" when the store keeps none), while no process can take
	// the run: what the run left outside the store (its worktrees in a repository) goes then.
	// An error from cleanup stops the delete with nothing of the run removed.
	Delete(ctx context.Context, run string, cleanup func(dir string) error) error
	// List lists the ids of the runs, oldest first.
	List(ctx context.Context) ([]string, error)
	// Spec reads what a run was created with. A run that does not exist is run_unavailable
	// (wrapping ErrNotFound).
	Spec(ctx context.Context, run string) (*Spec, error)
	// Published reads the status a holder of the run last published (nil when none ever did)
	// and whether a process holds the run now.
	Published(ctx context.Context, run string) (st *Status, held bool, err error)
	// Rows calls fn with each durable row of the run's journal from seq from on, in order,
	// whether a process holds the run or not. It stops at fn's first error and returns it.
	// Each row may be decoded into the same Row: fn copies what it keeps.
	Rows(ctx context.Context, run string, from uint64, fn func(*journal.Row) error) error
	// Summary is the summary of the run's durable rows (journal.Summary), whether a process
	// holds the run or not, read without reading the rows: its journal's writer keeps it,
	// committed with the rows it covers, so it never differs from them.
	Summary(ctx context.Context, run string) (*journal.Summary, error)
	// Outstanding lists what the run has outstanding (journal.Outstanding: its open calls,
	// its unknown outcomes without a verdict, its verdicts), each list cut at limit, whether a
	// process holds the run or not, from the index its journal's writer keeps beside the
	// summary: never the rows (but those of a journal written before the index was kept).
	Outstanding(ctx context.Context, run string, limit int) (*journal.Outstanding, error)
	// PutAnswer leaves the answer to a decision for the process that holds the run, which
	// journals it (TakeAnswers): only a run's process writes its journal.
	PutAnswer(ctx context.Context, run string, a Answer) error
	// RequestCancel stores a request to cancel a run; a process that holds it is told at
	// once, and one that takes it later finds the request.
	RequestCancel(ctx context.Context, run string) error
	// PutFile keeps content by its digest (sha256:<hex>) and returns the digest.
	PutFile(ctx context.Context, data []byte) (digest string, err error)
	// File reads content by digest (ErrNotFound when the store does not have it).
	File(ctx context.Context, digest string) ([]byte, error)
	// Records is the collection of records of one kind, of a run ("" for the store's own).
	Records(run string, kind Kind) Records
	// Log is where the full account of a run's errors goes ("" for the store's own).
	Log(run string) Log
	// Close releases the store's resources; leases still held are let go.
	Close() error
}

// PageReader is a Store that reads a page of a run's rows at the page's cost: a paged replay
// reads a long journal again a page at a time, where Rows, stopped by fn, may read and decode
// well past the page first. RowsPage is Rows stopping after limit rows (0: none).
type PageReader interface {
	RowsPage(ctx context.Context, run string, from uint64, limit int, fn func(*journal.Row) error) error
}

// ReadingAcquirer is a Store that reads a run's rows as it takes it: AcquireReading is Acquire
// that gives read the run's journal, read-only, before it is opened to write (store/local: on
// the open that checks it, beside the check, so that a resume's History reads the file's pages
// once fewer and while the check runs). read may be called more than once (what counts is its
// last call's), and its outcome counts once the journal has passed its check. An error of
// read's is AcquireReading's, and the run is let go.
type ReadingAcquirer interface {
	AcquireReading(ctx context.Context, run string, read func(Journal) error) (Lease, error)
}

// ProcessLockWarner is a Lease that may hold its run without a process lock of its own (one
// that could not be taken): the run goes on, and says so in a warning row.
type ProcessLockWarner interface {
	ProcessLockError() error
}

// Lease is a run held by this process.
type Lease interface {
	Run() string
	// Token names this holding of the run: the run's started row records it.
	Token() string
	// Journal is the run's journal, open for writing; it is fenced once the lease is lost.
	Journal() Journal
	// Dir is a folder of this host that belongs to the run, for its processes' own files
	// (a host's log); "" when the store has none.
	Dir() string
	// Publish makes st what readers of the run see while it is held. It may keep only the
	// latest of several quick calls.
	Publish(st *Status)
	// Cancelled is closed once a cancel request of the run is stored; already closed when
	// Acquire returns if one was stored before.
	Cancelled() <-chan struct{}
	// Lost is closed if the lease is lost; the journal then refuses every write.
	Lost() <-chan struct{}
	// TakeAnswers returns the answers PutAnswer left for the run and forgets them.
	TakeAnswers() ([]Answer, error)
	// Release closes the journal (what it buffered is committed, unless it was fenced) and
	// lets the lease go.
	Release() error
}

// Journal is a run's journal as its holder writes it: rows appended in seq order, made durable
// by group commit. Every method is safe for concurrent use.
type Journal interface {
	// Append gives each row the next seq (and At, when zero), buffers the rows and returns the
	// last seq given; 0 when the journal refuses writes (Sync then says why).
	Append(rows ...*journal.Row) uint64
	// Sync returns once every row up to seq is durable, committing what is buffered if need be.
	Sync(seq uint64) error
	// Write is Append and then Sync.
	Write(rows ...*journal.Row) (uint64, error)
	// LastSeq is the last seq given; DurableSeq the last made durable.
	LastSeq() uint64
	DurableSeq() uint64
	// Rows returns every durable row, seq 1 first.
	Rows() ([]journal.Row, error)
	// Page returns up to limit durable rows from seq from on, in order: a resume reads its
	// journal a page at a time, so its memory does not grow with the journal.
	Page(from uint64, limit int) ([]journal.Row, error)
	// Each calls fn with up to limit durable rows from seq from on (0: every one), in order, and
	// stops at fn's first error, which it returns. Each row is decoded into the same Row, which
	// fn must not keep: a pass over a whole journal allocates no row per row.
	Each(from uint64, limit int, fn func(*journal.Row) error) error
}

// Expecter is a journal whose commits wait, briefly, for the rows of writers that announced
// them (Expect; done once the writer asks for its commit or has none to ask for): calls that
// start together share one commit.
type Expecter interface {
	Expect() (done func())
}

// Kind names a collection of records.
type Kind string

// The collections a store keeps.
const (
	KindDecisions   Kind = "decisions"   // of a run: an owner's decisions
	KindInbox       Kind = "inbox"       // of a run: reports written to it by other processes
	KindReplies     Kind = "replies"     // of a run: its answers to them
	KindAudit       Kind = "audit"       // of the store: who changed what, when
	KindIdempotency Kind = "idempotency" // of the store: a request's key and what it did
	KindWorkers     Kind = "workers"     // of a run: why workers that looked at it could not take it (WorkerNote)
)

// WorkerNote is what a worker that could not take a run leaves on it (KindWorkers, under the
// worker's id; deleted once it can): status and inspect say it.
type WorkerNote struct {
	Worker string    `json:"worker"`
	Why    string    `json:"why"`
	At     time.Time `json:"at"`
}

// String is the note as a status says it.
func (n WorkerNote) String() string {
	return "worker " + n.Worker + " at " + n.At.Format(time.RFC3339) + ": " + n.Why
}

// Kinds lists the collections a store keeps.
var Kinds = []Kind{KindDecisions, KindInbox, KindReplies, KindAudit, KindIdempotency, KindWorkers}

// Records is a collection of small documents (JSON) by key. A key is 1 to 128 characters of
// letters, digits and . _ - (not starting with .), and keys list in byte order.
type Records interface {
	// Put writes a record, replacing any.
	Put(ctx context.Context, key string, value []byte) error
	// Create writes a record only when the key is free: ErrExists otherwise. What is created
	// once stays (an idempotency key, a report taken once).
	Create(ctx context.Context, key string, value []byte) error
	// Get reads a record (ErrNotFound when there is none).
	Get(ctx context.Context, key string) ([]byte, error)
	// List lists the records whose key starts with prefix, in key order.
	List(ctx context.Context, prefix string) ([]Record, error)
	// Delete removes a record; a key with no record is no error.
	Delete(ctx context.Context, key string) error
}

// Record is one record of a collection.
type Record struct {
	Key   string
	Value []byte
}

// Log is an append-only log of full accounts, one line each.
type Log interface {
	// Append adds one line (a newline is added).
	Append(line []byte) error
	// Name says where the log is, for a diagnostic to name.
	Name() string
	// Read returns whole lines of the log from byte offset on, at most about max bytes of
	// them, and the offset after the last: nothing (and offset) when there is no more yet.
	Read(offset int64, max int) (lines []byte, next int64, err error)
	// Size is how many bytes the log holds (0 when it does not exist yet).
	Size() (int64, error)
}

// Conditions callers branch on, wrapped in the errors a store returns; test with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	// ErrNoRun: the run named is not in the store (it wraps ErrNotFound).
	ErrNoRun     = fmt.Errorf("no such run: %w", ErrNotFound)
	ErrExists    = errors.New("already exists")
	ErrHeld      = errors.New("held by another process")
	ErrLeaseLost = errors.New("the run's lease was lost")
	// ErrUnreachable: the store did not answer for as long as a holder waits (a cluster that
	// lost its quorum, a host cut off from it); what is durable is as it was, and any process
	// that reaches the store can resume the run.
	ErrUnreachable = errors.New("the store cannot be reached")
)

// ValidKey reports whether key may name a record: 1 to 128 of A-Z a-z 0-9 _ - and ., not
// starting with a dot. (Written out: the regular expression's bounded repetition cost every
// process 3 ms to compile at start.)
func ValidKey(key string) bool {
	if len(key) == 0 || len(key) > 128 || key[0] == '.' {
		return false
	}
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// SpecSchema is the schema of a run's spec.
const SpecSchema = "crw-flow-run/1"

// Spec is what a run was created with. It is written once and never rewritten.
type Spec struct {
	Schema       string `json:"schema"`
	Run          string `json:"run"`
	Workflow     string `json:"workflow"` // the entry file, absolute
	ScriptDigest string `json:"script_digest"`
	Backend      string `json:"backend"`
	// BackendOptions are the backend's options, as its Prepare recorded them.
	BackendOptions map[string]string `json:"backend_options,omitempty"`
	// Answers and Codex are where runs created before backend_options kept the fake's and the
	// app server's one option; stores move them there when they read a spec.
	Answers      string                  `json:"answers,omitempty"`
	Codex        string                  `json:"codex,omitempty"`
	Cwd          string                  `json:"cwd"` // where the run's threads work
	Input        json.RawMessage         `json:"input"`
	Pool         int                     `json:"pool"`
	BudgetTokens int64                   `json:"budget_tokens,omitempty"`
	Limits       *Limits                 `json:"limits,omitempty"`
	Roles        map[string]journal.Pair `json:"roles,omitempty"`
	LibDirs      []string                `json:"lib_dirs,omitempty"`
	// OmitCallSeqs: the run's CallResults have no meta.startSeq and meta.endSeq, as a run
	// created by crw flow run has none.
	OmitCallSeqs bool `json:"omit_call_seqs,omitempty"`
	// Files are the workflow's files (its entry and the modules it loaded from disk) by real
	// path, each the digest of its content as the store keeps it (PutFile) from the run's
	// creation on.
	Files map[string]string `json:"files,omitempty"`
	// CodeKept: every process of the run loads its workflow from Files (or a resume change's
	// files), as the store keeps them, never from the disk of the host it runs on: the run's
	// code travels with it (a queued run, a run on a cluster a worker of any host may take).
	CodeKept bool `json:"code_kept,omitempty"`
	// Host is the host the run is tied to (a session run on a shared store: its steps, its
	// replies and its owner's binding are in that host's state folder), by its id; "" for a run
	// a process of any host may go on with.
	Host string            `json:"host,omitempty"`
	Env  map[string]string `json:"env,omitempty"`
	// The run's repository (docs/workspaces.md): its top level, the head its calls start
	// from as given (--head) and the commit that named when the run was created. A run without
	// one has Repo "".
	Repo       string `json:"repo,omitempty"`
	Head       string `json:"head,omitempty"`
	HeadCommit string `json:"head_commit,omitempty"`
	// RepoURL is where the run's refs are kept besides (a clone URL; "" for none): its head
	// commit from its creation, and every ref it moves, moved there first. A host without the
	// repository at Repo clones it from there, and every process fetches the run's refs from
	// it before it goes on.
	RepoURL string `json:"repo_url,omitempty"`
	// KeepWorktrees leaves the run's worktrees in place when it ends; TraceIsolation takes
	// digests around every turn (write isolation, recorded); TierSteps is auto or ask.
	KeepWorktrees  bool      `json:"keep_worktrees,omitempty"`
	TraceIsolation bool      `json:"trace_isolation,omitempty"`
	TierSteps      string    `json:"tier_steps,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	// Path is where the store keeps the spec (the local store's run.json), for errors that
	// name it; "" where it is no file.
	Path string `json:"-"`
}

// Limits bound what a run's workflow may take; a zero field takes the runtime's default, and
// every process that executes the run applies them.
type Limits struct {
	StackDepth int   `json:"stack_depth,omitempty"`
	HeapBytes  int64 `json:"heap_bytes,omitempty"`
	LoadTimeMS int64 `json:"load_time_ms,omitempty"`
	// DeadlineMS is how long each process that executes the run may take, from when it holds
	// the run; when it passes, the calls in flight are interrupted and the run ends failed.
	DeadlineMS int64 `json:"deadline_ms,omitempty"`
	// PromptBytes bounds one call's prompt (DefaultPromptBytes; at most MaxPromptBytes).
	PromptBytes int64 `json:"prompt_bytes,omitempty"`
	// LogBytes bounds the run's log: past it the workflow's lines are dropped and counted
	// (DefaultLogBytes; at most MaxLogBytes).
	LogBytes int64 `json:"log_bytes,omitempty"`
}

// The bounds of what a workflow can make crw keep: a prompt is journaled whole, and a run's
// log lives in the state folder every other run shares.
const (
	DefaultPromptBytes = 4 << 20
	MaxPromptBytes     = 64 << 20
	DefaultLogBytes    = 64 << 20
	MaxLogBytes        = 1 << 30
)

// Prompt is the bound of a call's prompt.
func (l *Limits) Prompt() int64 {
	if l == nil || l.PromptBytes <= 0 {
		return DefaultPromptBytes
	}
	return min(l.PromptBytes, MaxPromptBytes)
}

// Log is the bound of the run's log.
func (l *Limits) Log() int64 {
	if l == nil || l.LogBytes <= 0 {
		return DefaultLogBytes
	}
	return min(l.LogBytes, MaxLogBytes)
}

// Upgrade moves what older specs kept elsewhere to where it is kept now, and gives the input
// its compact form (a spec file may be indented).
func (s *Spec) Upgrade() {
	var b bytes.Buffer
	if json.Compact(&b, s.Input) == nil {
		s.Input = b.Bytes()
	}
	for name, v := range map[string]string{"answers": s.Answers, "codex": s.Codex} {
		if v != "" {
			if s.BackendOptions == nil {
				s.BackendOptions = map[string]string{}
			}
			s.BackendOptions[name] = v
		}
	}
	s.Answers, s.Codex = "", ""
}

// State is where a run stands.
type State string

const (
	// StateRunning: a process holds the run and works on it.
	StateRunning State = "running"
	// StatePaused: a usage or rate limit, or a token budget, paused the run (Status.Paused
	// says which); a resume goes on once the limit has passed, with a larger budget for its
	// own.
	StatePaused State = "paused"
	// StateWaitingDecision: the run waits for the answer to a decision (Status.Decisions).
	StateWaitingDecision State = "waiting_decision"
	// StateWaitingResume: the run's process ended waiting for decisions, and every one has
	// been answered since with no process started (crw flow answer --no-resume): a resume goes
	// on with it.
	StateWaitingResume State = "waiting_resume"
	// StateEnded: the run has its end (completed, failed or cancelled).
	StateEnded State = "ended"
	// StateCrashed: no process holds the run and it has not ended.
	StateCrashed State = "crashed"
	// StateQueued: no process has run it yet (its journal has no row): created for a worker
	// to take (crw flow start --queue), or its first process died before its first row. A
	// worker takes it, or crw flow resume runs it.
	StateQueued State = "queued"
	// StateStopped is published by a process that stops without ending its run (a
	// divergence, a journal that failed): readers see the run crashed, with the reason.
	StateStopped State = "stopped"
	// StateUnreadable is how a list shows a run whose files cannot be read.
	StateUnreadable State = "unreadable"
)

// RunStatus is how a run ended, or why its process stopped.
type RunStatus string

const (
	RunCompleted RunStatus = "completed" // the workflow returned
	RunFailed    RunStatus = "failed"    // the workflow threw
	RunPaused    RunStatus = "paused"    // a usage or rate limit, or a token budget, paused it
	// RunWaitingDecision: its script waits for nothing but decisions (crw.decide); its
	// process ended, and crw flow answer resumes it.
	RunWaitingDecision RunStatus = "waiting_decision"
	RunCancelled       RunStatus = "cancelled"
)

// WaitsForAProcess reports whether a run in state s needs only a process to go on: no
// process holds it and it has not ended, nor waits for an answer or a limit (queued, crashed,
// waiting_resume). A worker takes such a run, crw flow next resumes a session run in it.
func (s State) WaitsForAProcess() bool {
	return s == StateQueued || s == StateCrashed || s == StateWaitingResume
}

// Final reports whether a run that ended with s is over for good: one that paused or waits for
// a decision goes on with a resume, and "" has not ended.
func (s RunStatus) Final() bool { return s != "" && s != RunPaused && s != RunWaitingDecision }

// Counts are a run's calls by status.
type Counts map[journal.CallStatus]int

// Clone returns a copy.
func (c Counts) Clone() Counts {
	out := make(Counts, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out
}

// Total is the number of calls counted.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// Status is where a run stands: the one view of a run that its holder publishes and that
// status, list, follow and the end of a run print.
type Status struct {
	Run      string            `json:"run"`
	State    State             `json:"state"`
	Status   RunStatus         `json:"status"` // "" until the run ends
	Result   json.RawMessage   `json:"result"`
	Error    *journal.RunError `json:"error"`
	Calls    Counts            `json:"calls"`
	InFlight int               `json:"in_flight"`
	Tokens   journal.Tokens    `json:"tokens"`
	Workflow string            `json:"workflow"`
	Backend  string            `json:"backend"`
	Started  time.Time         `json:"started"`
	// What a holder adds: still replaying its journal, its process, its journal's last seq,
	// when it last published.
	Replaying bool      `json:"replaying,omitempty"`
	PID       int       `json:"pid,omitempty"`
	LastSeq   uint64    `json:"last_seq,omitempty"`
	Updated   time.Time `json:"updated,omitzero"`
	// Holder says why the process that holds the run does not answer (it is stopped, or
	// stuck), when it does not: what it published last is all there is.
	Holder string `json:"holder,omitempty"`
	// Decisions are the decisions the run waits for, oldest first.
	Decisions []journal.PendingDecision `json:"decisions,omitempty"`
	// Paused is what paused a run whose process ended paused, when its ended row says.
	Paused *journal.Paused `json:"paused,omitempty"`
	// Unserved: a run no process holds that workers looked at and could not take, each with
	// why (WorkerNote.String; a line saying so when their notes cannot be read).
	Unserved []string `json:"unserved,omitempty"`
}

// FileCollector is a store that keeps a run's workflow files apart from the run (by digest,
// shared between runs): CollectFiles removes those no run names, put longer than grace ago.
type FileCollector interface {
	CollectFiles(ctx context.Context, grace time.Duration) (removed int, err error)
}

// Liveness is a store whose runs may be live before a process holds them (the local store's
// start lock, held from a run's start until its process holds it): Live tells whether a process
// holds the run, or its start does. A store that is not one has its runs live while held
// (Published).
type Liveness interface {
	Live(run string) bool
}

// Answer is the answer to a decision of a run (crw flow answer): the decision's id, the value
// (JSON, valid against the decision's schema) and who gave it.
type Answer struct {
	ID    string          `json:"id"`
	Value json.RawMessage `json:"value"`
	By    string          `json:"by"`
}
