package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/tools"
	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/wire"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// add registers t with the SDK: a call's arguments are checked and decoded by the tool, the
// run they name resolved, a mutation done once per request key and recorded in the audit, and
// what the tool answers (or the error) put in the tool's envelope.
func (s *Server) add(t tools.Tool) {
	readOnly := !t.Mutation
	s.tools = append(s.tools, t)
	s.mcp.AddTool(&mcp.Tool{
		Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly, IdempotentHint: t.Mutation, DestructiveHint: &t.Destructive},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := &tools.Call{Who: who(req)}
		v, err := t.Decode(req.Params.Arguments)
		if err != nil {
			return s.answer(t, c, nil, err), nil
		}
		if r, ok := v.(tools.AboutRun); ok {
			c.Run = r.RunID()
		}
		// The request as the client sent it is what its key is for: a run it names by a
		// prefix or as last is the run it names when it is done.
		dig := digest(t.Name, v)
		do := func() *mcp.CallToolResult {
			if err := s.resolveRun(ctx, c, v); err != nil {
				return s.answer(t, c, nil, err)
			}
			out, err := t.Run(ctx, c, v)
			return s.answer(t, c, out, err)
		}
		if !t.Mutation {
			return do(), nil
		}
		res, replayed, err := s.keys.Do(ctx, t.Name, v.(tools.Keyed).Key(), dig, do)
		if err != nil {
			res = s.answer(t, c, nil, err)
		}
		if !replayed {
			// The mutation is recorded, however it ended, as the command line's are.
			result, detail := "ok", ""
			if res.IsError {
				result, detail = wire.Failure(res)
			}
			s.audit(ctx, t.Name, c, result, detail)
		}
		return res, nil
	})
}

// resolveRun puts in the input the id of the run it names, as the command line does with a
// RUN argument: an id, a unique prefix of one or of its random part, or last.
func (s *Server) resolveRun(ctx context.Context, c *tools.Call, in any) error {
	r, ok := in.(tools.AboutRun)
	if !ok || r.RunID() == "" {
		return nil
	}
	c.Run = r.RunID()
	id, err := ops.ResolveRun(ctx, s.svc.Store, s.state, r.RunID())
	if err != nil {
		return err
	}
	r.SetRunID(id)
	c.Run = id
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
func (s *Server) answer(t tools.Tool, c *tools.Call, out any, err error) *mcp.CallToolResult {
	env := map[string]any{t.Payload: out, "error": nil}
	if err != nil {
		e := s.coded(c, tools.Named(err))
		env = map[string]any{t.Payload: nil, "error": wire.Error(e, s.errorRun(c.Run))}
	}
	data, merr := json.Marshal(env)
	if merr != nil {
		e := errs.New(errs.CapabilityUnavailable, "the tool's answer could not be written").Wrap(merr).
			Because("mcp", "answer_unwritable", "unknown", errs.Uncertain)
		store.LogError(s.svc.Store.Log(""), e)
		data, _ = json.Marshal(map[string]any{t.Payload: nil, "error": wire.Error(e, nil)})
		err = e
	}
	return &mcp.CallToolResult{IsError: err != nil, StructuredContent: json.RawMessage(data),
		Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}
}

// coded is err as an errs.Error: what crw's code returns already is one; anything else (a
// request the client cancelled, a failure with no code) gets a code and a diagnostic, its text
// going to the state folder's log, never to the client.
func (s *Server) coded(c *tools.Call, err error) *errs.Error {
	e, ok := errs.As(err)
	if !ok {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			e = errs.New(errs.RunUnavailable, "%s: the request ended before the operation did", about(c)).Wrap(err).
				Because("mcp", "request_cancelled", "unknown", errs.Uncertain).Next("inspect the run before sending the request again")
		} else {
			e = errs.New(errs.CapabilityUnavailable, "%s: the operation failed", about(c)).Wrap(err).
				Because("mcp", "operation_failed", "unknown", errs.Uncertain).Next("read the log the diagnostic names")
		}
	}
	if e.Diagnostic != nil && e.Diagnostic.Log == "" {
		run := ""
		if s.errorRun(c.Run) != nil {
			run = c.Run
		}
		store.LogError(s.svc.Store.Log(run), e)
	}
	return e
}

// about is what a call's error is about: its run, or the request.
func about(c *tools.Call) string {
	if c.Run != "" && journal.ValidRunID(c.Run) {
		return "run " + c.Run
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
func (s *Server) audit(ctx context.Context, op string, c *tools.Call, result, detail string) {
	run := c.Run
	if !journal.ValidRunID(run) {
		run = ""
	}
	s.svc.Audit(context.WithoutCancel(ctx), engine.AuditEntry{Op: op, Run: run, Who: c.Who, Result: result, Detail: detail})
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
	w := "mcp client " + wire.Clean(name, 64)
	if req.Session != nil && req.Session.ID() != "" {
		w += " (session " + wire.Clean(req.Session.ID(), 64) + ")"
	}
	return w
}
