// Package mockmodel is a scripted model for tests of the app-server backend: it serves the
// OpenAI Responses API (an SSE stream) on 127.0.0.1 as the model provider of a real
// `codex app-server`, and answers from an answers file in the fake backend's format, so one
// answers file drives both backends.
//
// An owner thread (Own) is scripted instead: it calls the multi_agent_v1 tools, as a user's
// Codex session spawning subagents for crw does, and its subagents are answered as any thread.
//
// Which TURN answers a request is decided as the fake backend decides it: the first entry
// whose match fits the call, then that entry's turn k (none: the answer is synthesized from the
// turn's outputSchema, or "ok"). The mock learns the call from the headers x-crw-call,
// x-crw-role and x-crw-node, which the app-server backend sends to the provider named by its
// Options.CallHeaders (set it to Provider). A session run's subagent has none: its call and
// role come from the marker and role lines its first message starts with (crw-flow-op: c<N>/...,
// CRW-ROLE: role), and k counts the turns of all the call's subagents, so the attempt after a
// lost one gets the next turn. Without either a thread's call index is the order in
// which threads first reached the mock, and role and node are unknown, so entries that match
// by role or node never fit. k counts the distinct turns the thread's requests belong to
// (turn_id of x-codex-turn-metadata), so a retried request gets the same answer; a fork is a
// thread of its own. Codex's compaction requests get a summary and count for nothing.
//
// A TURN becomes: json and text, an assistant message in the final_answer phase; error, what
// makes Codex report that codexErrorInfo (see Provokes; any other kind is served as a dropped
// stream, which Codex reports as other); lost, a stream that stays open and silent until Codex
// gives up on it or the server closes; delay_ms, a pause after the stream opens (before the
// status line for an HTTP error); tokens, the usage of response.completed (without it the
// usage is estimated from the prompt and the answer as the fake backend does).
package mockmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/schema"
)

// Provider is the model provider id of the mock in the Codex configuration Config writes.
const Provider = "crw-mock"

// Model is the model name the configuration selects.
const Model = "mock-model"

// Request is a model request the mock answered.
type Request struct {
	Thread string // the thread-id header
	Turn   string // turn_id of x-codex-turn-metadata
	Call   int
	Role   string
	Node   string
	K      int
	Prompt string          // the text of the last user message
	Schema json.RawMessage // the turn's outputSchema; nil for a text turn
	Answer string          // json, text, synthesized, error:<kind>, lost or compaction
	Items  int             // the request's input items: its history
	// NodeCall and RoleCall are the call's orders within its node and its role (0 when the
	// headers do not say), and Task the last user message of its thread's first turn.
	NodeCall, RoleCall int
	Task               string
	// Outputs are an owner's function call outputs so far, by call id (call_owner_<step>).
	Outputs map[string]string
	// Tools are the function tools the request offers the model.
	Tools []Tool
}

// Tool is a function tool a request offers: its name, and the namespace it is in ("" for a
// tool of its own), as the model calls it.
type Tool struct {
	Namespace, Name, Description string
	Parameters                   json.RawMessage
}

// Server is a running mock model.
type Server struct {
	answers *fake.Answers
	http    *httptest.Server
	stop    chan struct{} // closed by Close: held streams end

	mu     sync.Mutex
	owners map[string][]OwnerStep // scripted owner threads
	// promptOwners are scripted owners found by a text of their last user message.
	promptOwners map[string][]OwnerStep
	threads      map[string]*thread
	unnamed      int // threads seen without call headers
	// sessionCalls are the calls of a session run by their number: a subagent is located by
	// the marker and role lines of its first message.
	sessionCalls map[int]*thread
	n            int // responses served
	requests     []Request
}

type thread struct {
	call       int
	role, node string
	turns      []string
	// nodeCall, roleCall and task: see Request.
	nodeCall, roleCall int
	task               string
}

// New starts a mock that answers from answers (nil: every answer is synthesized).
func New(answers *fake.Answers) *Server {
	s := &Server{answers: answers, stop: make(chan struct{}), threads: map[string]*thread{}, sessionCalls: map[int]*thread{}}
	s.http = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the provider's base_url; Codex posts to URL/responses.
func (s *Server) URL() string { return s.http.URL + "/v1" }

// Close ends held streams and stops the server.
func (s *Server) Close() {
	close(s.stop)
	s.http.Close()
}

// Config is a Codex config.toml that makes the mock the model provider, with no retries.
func (s *Server) Config() string {
	return fmt.Sprintf(`model = %q
model_provider = %q

[model_providers.%s]
name = "crw mock model"
base_url = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
`, Model, Provider, Provider, s.URL())
}

// WriteCodexHome writes Config as dir/config.toml; dir is then a CODEX_HOME. Each role becomes
// an agent role of the multi_agent_v1 tools: spawn_agent takes it as agent_type, and its
// subagents run on the role's model and effort.
func (s *Server) WriteCodexHome(dir string, roles ...Role) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	config := s.Config()
	if len(roles) > 0 {
		config += "\n[agents]\nmax_threads = 4\n"
		if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o755); err != nil {
			return err
		}
	}
	for _, r := range roles {
		file := filepath.Join(dir, "agents", r.Name+".toml")
		config += fmt.Sprintf("\n[agents.%s]\ndescription = %q\nconfig_file = %q\n", r.Name, r.Description, file)
		role := fmt.Sprintf("model = %q\nmodel_reasoning_effort = %q\ndeveloper_instructions = %q\n",
			r.Model, r.Effort, "You are the "+r.Name+" role.")
		if err := os.WriteFile(file, []byte(role), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o644)
}

// Requests are the requests answered so far, in the order they came.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// failure is how the mock provokes a codexErrorInfo: an HTTP error status with an OpenAI
// error body, a response.failed event, or (drop) a stream closed before response.completed.
type failure struct {
	status             int
	typ, code, message string
	inStream, drop     bool
}

// failures are the kinds Codex 0.169.0 was seen to report, with no retries, for these answers.
var failures = map[string]failure{
	"contextWindowExceeded":         {status: 400, typ: "invalid_request_error", code: "context_length_exceeded", message: "Your input exceeds the context window of this model."},
	"usageLimitExceeded":            {status: 429, typ: "insufficient_quota", code: "insufficient_quota", message: "You exceeded your current quota."},
	"responseTooManyFailedAttempts": {status: 429, typ: "requests", code: "rate_limit_exceeded", message: "Rate limit reached for requests."},
	"rateLimitExceeded":             {inStream: true, code: "rate_limit_exceeded", message: "Rate limit reached for requests."},
	"serverOverloaded":              {inStream: true, code: "server_is_overloaded", message: "The server is overloaded."},
	"internalServerError":           {status: 500, typ: "server_error", message: "The server had an error while processing your request."},
	"httpConnectionFailed":          {status: 502, typ: "server_error", message: "Bad gateway."},
	"modelNotFound":                 {status: 404, typ: "invalid_request_error", code: "model_not_found", message: "The model does not exist."},
	"other":                         {drop: true},
}

// Provokes tells whether an error TURN of this kind makes Codex report that codexErrorInfo.
func Provokes(kind string) bool {
	_, ok := failures[kind]
	return ok
}

// responsesBody is what the mock reads of a Responses API request.
type responsesBody struct {
	Input []struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		CallID string          `json:"call_id"` // function_call_output
		Output json.RawMessage `json:"output"`
	} `json:"input"`
	Text *struct {
		Format struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"text"`
	Tools []tool `json:"tools"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		http.NotFound(w, r)
		return
	}
	var body responsesBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var meta struct {
		TurnID      string `json:"turn_id"`
		RequestKind string `json:"request_kind"`
	}
	json.Unmarshal([]byte(r.Header.Get("x-codex-turn-metadata")), &meta)
	req := Request{Thread: r.Header.Get("thread-id"), Turn: meta.TurnID, Items: len(body.Input), Tools: toolsOf(body.Tools, "")}
	for i := len(body.Input) - 1; i >= 0; i-- {
		if body.Input[i].Role == "user" {
			for _, c := range body.Input[i].Content {
				req.Prompt += c.Text
			}
			break
		}
	}
	if body.Text != nil {
		req.Schema = body.Text.Format.Schema
	}
	if meta.RequestKind == "compaction" {
		req.Answer = "compaction"
		s.record(req)
		s.message(w, r, "Summary of the conversation so far.", nil, 0)
		return
	}

	if steps := s.ownerSteps(req.Thread, req.Prompt); steps != nil {
		outputs := map[string]string{}
		for _, in := range body.Input {
			if in.Type == "function_call_output" {
				outputs[in.CallID] = outputText(in.Output)
			}
		}
		req.Outputs = outputs
		s.ownerStep(w, &req, steps, outputs)
		return
	}
	s.answer(w, r, req)
}

// answer answers a subagent's or a thread's turn as the answers file scripts it, or with an
// answer synthesized from its schema.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, req Request) {
	s.locate(&req, r.Header)
	turn := s.answers.Find(fake.Query{Call: req.Call, NodeCall: req.NodeCall, RoleCall: req.RoleCall, Role: req.Role, Node: req.Node, Prompt: req.Task}, req.K)
	var text string
	switch {
	case turn == nil:
		req.Answer, text = "synthesized", "ok"
		if req.Schema != nil {
			text = "{}"
			if doc, err := schema.Synthesize(req.Schema); err == nil {
				text = string(doc)
			}
		}
	case turn.Lost:
		req.Answer = "lost"
	case turn.Error != nil:
		req.Answer = "error:" + *turn.Error
	case turn.Text != nil:
		req.Answer, text = "text", *turn.Text
	default:
		req.Answer, text = "json", string(turn.JSON)
	}
	s.record(req)

	var delay time.Duration
	var tokens *fake.TokenCounts
	if turn != nil {
		delay, tokens = time.Duration(turn.DelayMS)*time.Millisecond, turn.Tokens
	}
	switch {
	case turn != nil && turn.Lost:
		s.open(w)
		s.pause(r, -1)
	case turn != nil && turn.Error != nil:
		s.fail(w, r, *turn.Error, delay)
	default:
		if tokens == nil { // the fake backend's estimate: about four characters a token
			tokens = &fake.TokenCounts{Input: int64(len(req.Prompt)+3) / 4, Output: int64(len(text)+3) / 4}
		}
		s.message(w, r, text, tokens, delay)
	}
}

// tool is a tool of a request's body: a function, or a namespace of functions.
type tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Tools       []tool          `json:"tools"`
}

func toolsOf(ts []tool, namespace string) []Tool {
	var out []Tool
	for _, t := range ts {
		switch t.Type {
		case "function":
			out = append(out, Tool{Namespace: namespace, Name: t.Name, Description: t.Description, Parameters: t.Parameters})
		case "namespace":
			out = append(out, toolsOf(t.Tools, t.Name)...)
		}
	}
	return out
}

// outputText is a function call output's text: the output itself, or its input_text items'
// texts one a line (as Codex sends the output of a failed MCP tool call).
func outputText(raw json.RawMessage) string {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text
	}
	var items []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &items)
	var lines []string
	for _, it := range items {
		lines = append(lines, it.Text)
	}
	return strings.Join(lines, "\n")
}

// sessionStep is the start of a session step's spawn message: its marker and role lines.
var sessionStep = regexp.MustCompile(`^crw-flow-op: c([0-9]+)/t[0-9]+-a[0-9]+\nCRW-ROLE: ([A-Za-z0-9_-]+)\n`)

// locate sets the call and turn k of a request from its thread.
func (s *Server) locate(req *Request, h http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.threads[req.Thread]
	if t == nil {
		t = &thread{role: h.Get("x-crw-role"), node: h.Get("x-crw-node")}
		if n, err := strconv.Atoi(h.Get("x-crw-call")); err == nil {
			t.call = n
			t.nodeCall, _ = strconv.Atoi(h.Get("x-crw-node-call"))
			t.roleCall, _ = strconv.Atoi(h.Get("x-crw-role-call"))
		} else if m := sessionStep.FindStringSubmatch(req.Prompt); m != nil {
			// A session run's subagent: every subagent of the call shares its turns.
			n, _ := strconv.Atoi(m[1])
			if s.sessionCalls[n] == nil {
				s.sessionCalls[n] = &thread{call: n, role: m[2]}
			}
			t = s.sessionCalls[n]
		} else {
			s.unnamed++
			t.call = s.unnamed
		}
		s.threads[req.Thread] = t
	}
	if len(t.turns) == 0 {
		t.task = req.Prompt
	}
	req.Call, req.Role, req.Node = t.call, t.role, t.node
	req.NodeCall, req.RoleCall, req.Task = t.nodeCall, t.roleCall, t.task
	for i, id := range t.turns {
		if id == req.Turn {
			req.K = i + 1
			return
		}
	}
	t.turns = append(t.turns, req.Turn)
	req.K = len(t.turns)
}

func (s *Server) record(req Request) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
}

func (s *Server) ids() (resp, msg string) {
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	return fmt.Sprintf("resp_mock_%d", n), fmt.Sprintf("msg_mock_%d", n)
}

// open starts the SSE stream.
func (s *Server) open(w http.ResponseWriter) string {
	resp, _ := s.ids()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	event(w, map[string]any{"type": "response.created", "response": map[string]any{"id": resp, "object": "response", "status": "in_progress"}})
	return resp
}

func event(w http.ResponseWriter, e map[string]any) {
	data, _ := json.Marshal(e)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e["type"], data)
	w.(http.Flusher).Flush()
}

// pause waits d (forever when negative); false when the client left or the server closes.
func (s *Server) pause(r *http.Request, d time.Duration) bool {
	var after <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		after = t.C
	}
	select {
	case <-after:
		return true
	case <-r.Context().Done():
	case <-s.stop:
	}
	return false
}

// message streams one assistant message in the final_answer phase and response.completed.
func (s *Server) message(w http.ResponseWriter, r *http.Request, text string, tokens *fake.TokenCounts, delay time.Duration) {
	resp := s.open(w)
	if delay > 0 && !s.pause(r, delay) {
		return
	}
	_, msg := s.ids()
	event(w, map[string]any{"type": "response.output_item.done", "output_index": 0, "item": map[string]any{
		"type": "message", "id": msg, "role": "assistant", "status": "completed", "phase": "final_answer",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
	}})
	completed := map[string]any{"id": resp, "object": "response", "status": "completed"}
	if tokens != nil {
		completed["usage"] = map[string]any{
			"input_tokens":          tokens.Input,
			"input_tokens_details":  map[string]any{"cached_tokens": tokens.CachedInput},
			"output_tokens":         tokens.Output,
			"output_tokens_details": map[string]any{"reasoning_tokens": tokens.ReasoningOutput},
			"total_tokens":          tokens.Input + tokens.Output,
		}
	}
	event(w, map[string]any{"type": "response.completed", "response": completed})
}

// fail answers what makes Codex report kind.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, kind string, delay time.Duration) {
	f, ok := failures[kind]
	if !ok {
		f = failures["other"]
	}
	if f.status != 0 {
		if delay > 0 && !s.pause(r, delay) {
			return
		}
		e := map[string]any{"message": f.message, "type": f.typ, "param": nil, "code": nil}
		if f.code != "" {
			e["code"] = f.code
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		json.NewEncoder(w).Encode(map[string]any{"error": e})
		return
	}
	resp := s.open(w)
	if delay > 0 && !s.pause(r, delay) {
		return
	}
	if f.inStream {
		event(w, map[string]any{"type": "response.failed", "response": map[string]any{
			"id": resp, "status": "failed", "error": map[string]any{"code": f.code, "message": f.message},
		}})
	}
	// drop: the handler returns and the stream ends before response.completed
}
