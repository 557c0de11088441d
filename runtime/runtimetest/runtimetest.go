// Package runtimetest builds a workflow VM around a fake Host, for tests of the runtime and of
// the JS APIs it exposes.
//
// New writes a script to a temporary folder and loads it; Run runs it. The fake Host records
// every agent.Request, settles each call with a CallResult (at once, from another goroutine after
// a delay, in a chosen order, or when the test says so) and implements the crw module's services
// with a fixed clock, a seeded random stream, a log capture and configurable errors.
package runtimetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/lib"
	"github.com/crw-dev/crw/runtime/loader"
	"github.com/crw-dev/crw/runtime/modules/agent"
	"github.com/crw-dev/crw/runtime/modules/crw"
	"github.com/crw-dev/crw/runtime/vm"
)

// Prelude is the import block Main puts before a test body.
const Prelude = `import { agent } from "crw:agent";
import crw from "crw";
import * as schemas from "crw:lib/schemas";
`

// Main wraps body as the default async entry of an ES module that imports agent, crw and
// schemas. The body's first line is line 5 of the file.
func Main(body string) string {
	return Prelude + "export default async function main(input) {\n" + body + "\n}\n"
}

// Runtime is a loaded workflow and its fake host.
type Runtime struct {
	VM   *vm.VM
	Host *Host
	Dir  string // the temporary workflow folder
	Path string // the workflow file
}

// Run runs the workflow with a timeout that keeps a broken test from hanging, and only that:
// under the race detector on a loaded machine the heaviest scripts (TestOutputsAreBounded's
// strings of 2^27 characters) took over 60 s.
func (r *Runtime) Run(ctx context.Context) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	return r.VM.Run(ctx)
}

type config struct {
	name    string
	files   map[string]string
	input   json.RawMessage
	seed    uint64
	builtin fs.FS
	libDirs []string
	host    []func(*Host)
}

// Option configures New.
type Option func(*config)

// WithName names the workflow file (default "wf.js"); "wf.ts" makes it TypeScript.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithFile writes another file, relative to the workflow folder.
func WithFile(name, content string) Option {
	return func(c *config) { c.files[name] = content }
}

// WithInput sets the run's input JSON (default null).
func WithInput(input string) Option {
	return func(c *config) { c.input = json.RawMessage(input) }
}

// WithSeed sets the seed of Math.random (default 1).
func WithSeed(seed uint64) Option { return func(c *config) { c.seed = seed } }

// WithBuiltin replaces the embedded crw:lib modules (default lib.FS).
func WithBuiltin(fsys fs.FS) Option { return func(c *config) { c.builtin = fsys } }

// WithLibDirs adds user lib folders.
func WithLibDirs(dirs ...string) Option { return func(c *config) { c.libDirs = dirs } }

// WithHost configures the fake host before the workflow loads.
func WithHost(f func(*Host)) Option { return func(c *config) { c.host = append(c.host, f) } }

// New writes script to a temporary folder and loads it with a fake host; a load failure fails
// the test. Use Load to inspect load errors.
func New(t testing.TB, script string, opts ...Option) *Runtime {
	t.Helper()
	r, err := Load(t, script, opts...)
	if err != nil {
		t.Fatalf("runtimetest: load the workflow: %v", err)
	}
	return r
}

// Load is New that returns the load error instead of failing the test.
func Load(t testing.TB, script string, opts ...Option) (*Runtime, error) {
	t.Helper()
	c := &config{name: "wf.js", files: map[string]string{}, seed: 1, builtin: lib.FS}
	for _, o := range opts {
		o(c)
	}
	dir := t.TempDir()
	c.files[c.name] = script
	for name, content := range c.files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatalf("runtimetest: %v", err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatalf("runtimetest: %v", err)
		}
	}
	h := NewHost()
	for _, f := range c.host {
		f(h)
	}
	t.Cleanup(h.wait)
	path := filepath.Join(dir, c.name)
	v, err := vm.New(vm.Config{
		Workflow: path,
		LibDirs:  c.libDirs,
		Builtin:  c.builtin,
		Input:    c.input,
		Seed:     c.seed,
		Host:     h,
	})
	if err != nil {
		return nil, err
	}
	return &Runtime{VM: v, Host: h, Dir: dir, Path: path}, nil
}

// Mode says when the fake host settles a call.
type Mode int

const (
	// Now settles each call inside Call, before agent.call returns.
	Now Mode = iota
	// After settles each call from its own goroutine after Host.Delay.
	After
	// InOrder holds calls until len(Host.Order) were issued, then settles them one after
	// another in Host.Order (call indexes), each from its own goroutine. Calls issued after
	// that are held as in Manual.
	InOrder
	// Manual holds every call until the test calls Settle.
	Manual
)

// Errorf builds an error with a stable code, as the engine returns.
func Errorf(code errs.Code, format string, args ...any) *errs.Thrown {
	return errs.Throw(code, "", format, args...)
}

// Call is one agent.call the host received.
type Call struct {
	Index   int
	Request agent.Request
	settle  agent.Settle
	settled bool
}

// LogLine is one line the script logged.
type LogLine struct {
	Level, Message string
}

// Host is a fake vm.Host. Configure its exported fields before the run (through WithHost);
// read what it recorded through its methods, from any goroutine.
type Host struct {
	Mode  Mode
	Delay time.Duration // for After
	Order []int         // for InOrder
	// Result builds the CallResult JSON of a call (default DefaultResult).
	Result func(c Call) json.RawMessage
	// Given, when set, is the CallResult of a call as the module takes it, instead of Result's.
	Given func(c Call) agent.Result
	// CallError, when it returns an error, refuses the call at its call site.
	CallError func(req agent.Request) error
	// TierStepError and CommitError are thrown by crw.tierStep and crw.commit.
	TierStepError func(node string) error
	CommitError   func(node, message string) error
	// DecideAnswer answers crw.decide.
	DecideAnswer func(crw.Decision) (json.RawMessage, error)
	// EffectVerdict answers crw.effect; EffectError is thrown at its call site.
	EffectVerdict func(call string) (json.RawMessage, error)
	EffectError   func(call string) error
	// SchemaCheck is the strictness check of crw:lib/schemas exports (default: none).
	SchemaCheck func(schema []byte) []loader.Problem
	// Clock is the run's time (default a fixed instant); Rand is crw.random's stream.
	Clock func() time.Time
	Rand  func() float64

	wg        sync.WaitGroup
	mu        sync.Mutex
	calls     []*Call
	delivered []int
	logs      []LogLine
	tiers     []string
	commits   [][2]string
	decisions []crw.Decision
	effects   []string
	issued    chan struct{}
}

var _ vm.Host = (*Host)(nil)

// Epoch is the fake host's default clock.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// NewHost returns a host that settles every call at once with DefaultResult.
func NewHost() *Host {
	rng := rand.New(rand.NewPCG(7, 7))
	return &Host{
		Result: DefaultResult,
		Clock:  func() time.Time { return Epoch },
		Rand:   rng.Float64,
		issued: make(chan struct{}, 1),
	}
}

// DefaultResult is a completed CallResult whose output is the prompt.
func DefaultResult(c Call) json.RawMessage {
	id := fmt.Sprintf("c%d", c.Index)
	return Completed(c, c.Request.Prompt, id)
}

// Completed is a completed CallResult of c with the given output, its fields in the order
// call-result.md lists them.
func Completed(c Call, output any, callID string) json.RawMessage {
	type tokens struct {
		Input  int `json:"input"`
		Output int `json:"output"`
	}
	type meta struct {
		Role       string   `json:"role"`
		ThreadID   string   `json:"threadId"`
		TurnIDs    []string `json:"turnIds"`
		RepairUsed bool     `json:"repairUsed"`
		Tokens     tokens   `json:"tokens"`
	}
	res := struct {
		CallID string  `json:"callId"`
		Handle string  `json:"handle"`
		Status string  `json:"status"`
		Output any     `json:"output"`
		Reason *string `json:"reason"`
		Meta   meta    `json:"meta"`
	}{
		CallID: callID,
		Handle: "crwh1:test:" + callID,
		Status: "completed",
		Output: output,
		Meta: meta{
			Role:     c.Request.Role,
			ThreadID: "t-" + callID,
			TurnIDs:  []string{"u-" + callID},
			Tokens:   tokens{Input: 10, Output: 5},
		},
	}
	b, err := json.Marshal(res)
	if err != nil {
		panic(err)
	}
	return b
}

// Call implements agent.Caller.
func (h *Host) Call(req agent.Request, settle agent.Settle) error {
	if h.CallError != nil {
		if err := h.CallError(req); err != nil {
			return err
		}
	}
	h.mu.Lock()
	c := &Call{Index: len(h.calls), Request: req, settle: settle}
	h.calls = append(h.calls, c)
	n := len(h.calls)
	h.mu.Unlock()
	select {
	case h.issued <- struct{}{}:
	default:
	}

	switch h.Mode {
	case Now:
		h.deliver(c, nil)
	case After:
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			time.Sleep(h.Delay)
			h.deliver(c, nil)
		}()
	case InOrder:
		if n == len(h.Order) {
			h.mu.Lock()
			held := make([]*Call, len(h.Order))
			for i, idx := range h.Order {
				held[i] = h.calls[idx]
			}
			h.mu.Unlock()
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				for _, c := range held {
					done := make(chan struct{})
					go func() {
						defer close(done)
						h.deliver(c, nil)
					}()
					<-done
				}
			}()
		}
	}
	return nil
}

// deliver settles c once, with result or the host's Result.
func (h *Host) deliver(c *Call, result json.RawMessage) {
	h.mu.Lock()
	if c.settled {
		h.mu.Unlock()
		panic(fmt.Sprintf("runtimetest: call %d settled twice", c.Index))
	}
	c.settled = true
	snapshot := *c
	h.mu.Unlock()
	var given agent.Result
	switch {
	case result != nil:
		given = resultOf(result)
	case h.Given != nil:
		given = h.Given(snapshot)
	default:
		given = resultOf(h.Result(snapshot))
	}
	c.settle(given, func() func() {
		h.mu.Lock()
		h.delivered = append(h.delivered, c.Index)
		h.mu.Unlock()
		return nil
	})
}

// resultOf is the agent.Result a CallResult's JSON gives. A text that is not a CallResult's
// JSON is given as the output, which the module then cannot parse: a host's bad result.
func resultOf(data json.RawMessage) agent.Result {
	var r struct {
		CallID string          `json:"callId"`
		Handle *string         `json:"handle"`
		Status string          `json:"status"`
		Output json.RawMessage `json:"output"`
		Reason *string         `json:"reason"`
		Meta   json.RawMessage `json:"meta"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return agent.Result{Output: data}
	}
	out := agent.Result{CallID: r.CallID, Handle: r.Handle, Status: r.Status, Output: r.Output, Reason: r.Reason}
	if r.Meta != nil {
		out.Meta = r.Meta
	}
	return out
}

// Settle settles call i (Manual mode), from any goroutine; a nil result is the host's Result.
func (h *Host) Settle(i int, result json.RawMessage) {
	h.mu.Lock()
	c := h.calls[i]
	h.mu.Unlock()
	h.deliver(c, result)
}

// WaitCalls blocks until n calls were issued or the timeout passes; it reports whether they were.
func (h *Host) WaitCalls(n int, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		h.mu.Lock()
		got := len(h.calls)
		h.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-h.issued:
		case <-deadline:
			return false
		}
	}
}

// Requests are the requests received, in issue order.
func (h *Host) Requests() []agent.Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]agent.Request, len(h.calls))
	for i, c := range h.calls {
		out[i] = c.Request
	}
	return out
}

// Delivered lists call indexes in the order their results reached the script.
func (h *Host) Delivered() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.delivered...)
}

// Logs are the lines logged through console and crw.log.
func (h *Host) Logs() []LogLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]LogLine(nil), h.logs...)
}

// TierSteps are the nodes crw.tierStep was called with.
func (h *Host) TierSteps() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.tiers...)
}

// Commits are the (node, message) pairs crw.commit was called with.
func (h *Host) Commits() [][2]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][2]string(nil), h.commits...)
}

// Now implements crw.Host.
func (h *Host) Now() time.Time { return h.Clock() }

// Random implements crw.Host.
func (h *Host) Random() float64 { return h.Rand() }

// Log implements crw.Host.
func (h *Host) Log(level, message string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs = append(h.logs, LogLine{Level: level, Message: message})
}

// TierStep implements crw.Host: it answers {node, evidence}.
func (h *Host) TierStep(node, evidence string) (json.RawMessage, error) {
	h.mu.Lock()
	h.tiers = append(h.tiers, node)
	h.mu.Unlock()
	if h.TierStepError != nil {
		if err := h.TierStepError(node); err != nil {
			return nil, err
		}
	}
	return json.Marshal(map[string]string{"node": node, "evidence": evidence})
}

// Commit implements crw.Host: it answers {node, message}.
func (h *Host) Commit(node, message string) (json.RawMessage, error) {
	h.mu.Lock()
	h.commits = append(h.commits, [2]string{node, message})
	h.mu.Unlock()
	if h.CommitError != nil {
		if err := h.CommitError(node, message); err != nil {
			return nil, err
		}
	}
	return json.Marshal(map[string]string{"node": node, "message": message})
}

// Decide implements crw.Host: DecideAnswer answers at once; without it the decision is never
// answered.
func (h *Host) Decide(d crw.Decision, settle func(json.RawMessage, error)) error {
	h.mu.Lock()
	h.decisions = append(h.decisions, d)
	answer := h.DecideAnswer
	h.mu.Unlock()
	if answer != nil {
		go settle(answer(d))
	}
	return nil
}

// Effect implements crw.Host: EffectError throws, EffectVerdict answers at once; without them
// the verdict never comes.
func (h *Host) Effect(call string, settle func(json.RawMessage, error)) error {
	h.mu.Lock()
	h.effects = append(h.effects, call)
	verdict, fail := h.EffectVerdict, h.EffectError
	h.mu.Unlock()
	if fail != nil {
		if err := fail(call); err != nil {
			return err
		}
	}
	if verdict != nil {
		go settle(verdict(call))
	}
	return nil
}

// Effects are the calls crw.effect asked about.
func (h *Host) Effects() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.effects...)
}

// Decisions are what crw.decide asked.
func (h *Host) Decisions() []crw.Decision {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]crw.Decision(nil), h.decisions...)
}

// CheckSchema implements vm.Host.
func (h *Host) CheckSchema(schema []byte) []loader.Problem {
	if h.SchemaCheck != nil {
		return h.SchemaCheck(schema)
	}
	return nil
}

// wait lets the goroutines the host started finish.
func (h *Host) wait() { h.wg.Wait() }

// RunOK builds a runtime for script, runs it to its end and returns its result; a script that
// throws fails the test with the script's message and stack.
func RunOK(t testing.TB, script string, opts ...Option) (json.RawMessage, *Runtime) {
	t.Helper()
	r := New(t, script, opts...)
	out, err := r.Run(context.Background())
	var se *vm.ScriptError
	if errors.As(err, &se) {
		t.Fatalf("script error: %s (code %q)\n%s", se.Message, se.Code, se.Stack)
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return out, r
}
