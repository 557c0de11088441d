package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// MaxArguments bounds a tool call's arguments; the transports bound a message too (16 MiB).
const MaxArguments = 16 << 20

// tool is one tool of the server: its name, what its description says, the member its answer
// goes in, and whether it changes a run (a mutation: it takes a request_key, and the audit
// records it).
type tool struct {
	name, title, description string
	payload                  string
	mutation, destructive    bool
	// input refines the inferred input schema (enums, bounds).
	input func(map[string]any)
}

// keyed is the input of a mutation: its request key.
type keyed interface{ key() string }

// aboutRun is an input that names a run: its errors are about it.
type aboutRun interface {
	runID() string
	setRunID(string)
}

// call is one tool call: who made it, and the run its error is about.
type call struct {
	who string
	run string
}

// add registers a tool whose input is In and whose answer run gives. The input schema is the
// one inferred from In (refined by t.input), compiled by crw's schema compiler, which checks
// every call's arguments before they are decoded: bad arguments are invalid_request. The output
// schema is the envelope of Out, strict.
func add[In any, Out any](s *Server, t tool, run func(ctx context.Context, c *call, in *In) (Out, error)) {
	in := infer[In]()
	if t.input != nil {
		t.input(in)
	}
	inJSON, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	validator, err := schema.Compile(inJSON)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: tool %s: its input schema: %v", t.name, err))
	}
	payload := infer[Out]()
	strict(payload)
	out := envelope(t.payload, payload)
	outJSON, err := json.Marshal(out)
	if err != nil {
		panic(err)
	}
	readOnly := !t.mutation
	s.tools = append(s.tools, t)
	s.mcp.AddTool(&mcp.Tool{
		Name: t.name, Title: t.title, Description: t.description,
		InputSchema: json.RawMessage(inJSON), OutputSchema: json.RawMessage(outJSON),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly, IdempotentHint: t.mutation, DestructiveHint: &t.destructive},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := &call{who: who(req)}
		var v In
		if err := decode(req.Params.Arguments, validator, &v); err != nil {
			return s.answer(t, c, nil, err), nil
		}
		if r, ok := any(&v).(aboutRun); ok {
			c.run = r.runID()
		}
		// The request as the client sent it is what its key is for: a run it names by a
		// prefix or as last is the run it names when it is done.
		dig := digest(t.name, &v)
		do := func() *mcp.CallToolResult {
			if err := s.resolveRun(ctx, c, &v); err != nil {
				return s.answer(t, c, nil, err)
			}
			out, err := run(ctx, c, &v)
			return s.answer(t, c, out, err)
		}
		if !t.mutation {
			return do(), nil
		}
		res, replayed, err := s.keys.do(ctx, t.name, any(&v).(keyed).key(), dig, do)
		if err != nil {
			res = s.answer(t, c, nil, err)
		}
		if !replayed {
			// The mutation is recorded, however it ended, as the command line's are.
			result, detail := "ok", ""
			if res.IsError {
				result, detail = auditResult(res)
			}
			s.audit(ctx, t.name, c, result, detail)
		}
		return res, nil
	})
}

// resolveRun puts in the input the id of the run it names, as the command line does with a
// RUN argument: an id, a unique prefix of one or of its random part, or last.
func (s *Server) resolveRun(ctx context.Context, c *call, in any) error {
	r, ok := in.(aboutRun)
	if !ok || r.runID() == "" {
		return nil
	}
	c.run = r.runID()
	id, err := ops.ResolveRun(ctx, s.svc.Store, s.st.Root(), r.runID())
	if err != nil {
		return err
	}
	r.setRunID(id)
	c.run = id
	return nil
}

// decode checks arguments against the tool's input schema and decodes them.
func decode(args json.RawMessage, v *schema.Validator, into any) error {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if len(args) > MaxArguments {
		return errs.New(errs.InvalidRequest, "arguments: %d bytes; the limit is %d", len(args), MaxArguments)
	}
	if err := v.Validate(args); err != nil {
		var ve *schema.ValidationError
		if errors.As(err, &ve) {
			// Where and which keyword, not the values: they are the caller's own.
			return errs.New(errs.InvalidRequest, "arguments do not match the tool's input schema: %s", ve.Brief())
		}
		return errs.New(errs.InvalidRequest, "arguments: %v", err)
	}
	if err := json.Unmarshal(args, into); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Type != nil && strings.Contains(te.Type.Kind().String(), "int") {
			// The schema's "integer" takes 1.0 as JSON Schema says; Go's integers do not.
			return errs.New(errs.InvalidRequest, "arguments: %s must be written as a whole number, without a fraction (got %s)", te.Field, te.Value)
		}
		return errs.New(errs.InvalidRequest, "arguments: %v", err)
	}
	return nil
}

// digest is what a request key's first request is compared by: the tool and its arguments but
// the key, as the input decoded them.
func digest(tool string, in any) string {
	data, _ := json.Marshal(in)
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers as written: two inputs that differ past float64's precision differ
	_ = dec.Decode(&m)
	delete(m, "request_key")
	data, _ = json.Marshal(m)
	sum := sha256.Sum256(append([]byte(tool+"\x00"), data...))
	return hex.EncodeToString(sum[:])
}

// answer is a tool's result: the envelope {payload: out, error: null}, or on an error
// {payload: null, error: ...} with IsError, as structured content and as its JSON text.
func (s *Server) answer(t tool, c *call, out any, err error) *mcp.CallToolResult {
	env := map[string]any{t.payload: out, "error": nil}
	if err != nil {
		e := s.coded(c, err)
		env = map[string]any{t.payload: nil, "error": toolError(e, s.errorRun(c.run))}
	}
	data, merr := json.Marshal(env)
	if merr != nil {
		e := errs.New(errs.CapabilityUnavailable, "the tool's answer could not be written").Wrap(merr).
			Because("mcp", "answer_unwritable", "unknown", errs.Uncertain)
		store.LogError(s.svc.Store.Log(""), e)
		data, _ = json.Marshal(map[string]any{t.payload: nil, "error": toolError(e, nil)})
		err = e
	}
	return &mcp.CallToolResult{IsError: err != nil, StructuredContent: json.RawMessage(data),
		Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}
}

// coded is err as an errs.Error: what crw's code returns already is one; anything else (a
// request the client cancelled, a failure with no code) gets a code and a diagnostic, its text
// going to the state folder's log, never to the client.
func (s *Server) coded(c *call, err error) *errs.Error {
	e, ok := errs.As(err)
	if !ok {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			e = errs.New(errs.RunUnavailable, "%s: the request ended before the operation did", c.about()).Wrap(err).
				Because("mcp", "request_cancelled", "unknown", errs.Uncertain).Next("inspect the run before sending the request again")
		} else {
			e = errs.New(errs.CapabilityUnavailable, "%s: the operation failed", c.about()).Wrap(err).
				Because("mcp", "operation_failed", "unknown", errs.Uncertain).Next("read the log the diagnostic names")
		}
	}
	if e.Diagnostic != nil && e.Diagnostic.Log == "" {
		run := ""
		if s.errorRun(c.run) != nil {
			run = c.run
		}
		store.LogError(s.svc.Store.Log(run), e)
	}
	return e
}

func (c *call) about() string {
	if c.run != "" && journal.ValidRunID(c.run) {
		return "run " + c.run
	}
	return "the request"
}

// errorRun is the run an error is about, when that run exists.
func (s *Server) errorRun(run string) *string {
	if run == "" || !journal.ValidRunID(run) {
		return nil
	}
	if _, err := s.svc.Store.Spec(context.Background(), run); err != nil {
		return nil
	}
	return &run
}

// audit records a mutation in the state folder's audit, as the command line records its
// commands', by the MCP client.
func (s *Server) audit(ctx context.Context, op string, c *call, result, detail string) {
	run := c.run
	if !journal.ValidRunID(run) {
		run = ""
	}
	s.svc.Audit(context.WithoutCancel(ctx), engine.AuditEntry{Op: op, Run: run, Who: c.who, Result: result, Detail: detail})
}

// auditResult is how a failed call ended, from its answer: the error's code and detail.
func auditResult(res *mcp.CallToolResult) (result, detail string) {
	var env struct {
		Error *ToolError `json:"error"`
	}
	data, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(data, &env) != nil || env.Error == nil {
		return "error", ""
	}
	return env.Error.Code, env.Error.Detail
}

// who is who a call is by, for the audit and the journal's answers and verdicts: the MCP
// client as it named itself, and its session on HTTP.
func who(req *mcp.CallToolRequest) string {
	name := "unnamed"
	if req.Session != nil {
		if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
			name = p.ClientInfo.Name
		}
	}
	w := "mcp client " + clean(name, 64)
	if req.Session != nil && req.Session.ID() != "" {
		w += " (session " + clean(req.Session.ID(), 64) + ")"
	}
	return w
}

// clean keeps at most n bytes of printable text of what a client says of itself.
func clean(s string, n int) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= n {
			break
		}
		if unicode.IsPrint(r) {
			b.WriteRune(r)
		} else {
			b.WriteRune('?')
		}
	}
	return b.String()
}
