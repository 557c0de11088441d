// Package wire is what crosses the wire of crw mcp whatever the transport: the error member
// of every tool's answer (the error contract's code, fixed message, safe response and
// bounded diagnostic), a failed answer read back, the bound on a call's arguments, and the text a
// client says of itself, cleaned before it is repeated.
package wire

import (
	"encoding/json"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crw-dev/crw/errs"
)

// MaxArguments bounds a tool call's arguments; the transports bound a message too (16 MiB).
const MaxArguments = 16 << 20

// ToolError is a tool's error: the contract's code, its fixed message and safe response, a bounded
// detail, the run it is about when that run exists, and the bounded diagnostic.
type ToolError struct {
	Code         string      `json:"code" jsonschema:"the stable error code"`
	Message      string      `json:"message" jsonschema:"the code's fixed message"`
	Detail       string      `json:"detail" jsonschema:"what is wrong, naming the field, file, run or call (at most 1 KiB)"`
	SafeResponse string      `json:"safe_response" jsonschema:"what to do on this code"`
	Run          *string     `json:"run" jsonschema:"the run the error is about, when it exists"`
	Diagnostic   *Diagnostic `json:"diagnostic" jsonschema:"the finer cause, when a dependency failed or the code has one"`
}

// Diagnostic is errs.Diagnostic.
type Diagnostic struct {
	CorrelationID string  `json:"correlationId" jsonschema:"ties the diagnostic to the log line with the full account"`
	Certainty     string  `json:"certainty" jsonschema:"certain or uncertain: whether crw knows what became of the operation"`
	Phase         string  `json:"phase"`
	Reason        string  `json:"reason" jsonschema:"the finer cause, a lower_snake word"`
	Disposition   string  `json:"disposition" jsonschema:"what became of the operation: not_started, stopped, held, unknown"`
	NextAction    *string `json:"nextAction" jsonschema:"what to do: follow it"`
	Log           *string `json:"log" jsonschema:"the log whose line with correlationId has the full account"`
}

// Error is e as a tool's error about run (nil: none).
func Error(e *errs.Error, run *string) *ToolError {
	out := &ToolError{Code: string(e.Code), Message: e.Message, Detail: e.Detail, SafeResponse: SafeResponse(e.Code), Run: run}
	out.Diagnostic = DiagnosticOf(e.Diagnostic)
	return out
}

// SafeResponse is what a caller does on code, as the contract says it, the capability
// descriptor it points at named: this server's capabilities tool.
func SafeResponse(code errs.Code) string {
	return strings.Replace(code.SafeResponse(), "the capability descriptor", "the capability descriptor (the capabilities tool)", 1)
}

// DiagnosticOf is d on the wire; nil stays nil.
func DiagnosticOf(d *errs.Diagnostic) *Diagnostic {
	if d == nil {
		return nil
	}
	return &Diagnostic{CorrelationID: d.CorrelationID, Certainty: string(d.Certainty), Phase: d.Phase,
		Reason: d.Reason, Disposition: d.Disposition, NextAction: OrNull(d.NextAction), Log: OrNull(d.Log)}
}

// OrNull is s, or nil when it is empty.
func OrNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Failure is how a failed call ended, from its answer: the error's code and detail.
func Failure(res *mcp.CallToolResult) (result, detail string) {
	var env struct {
		Error *ToolError `json:"error"`
	}
	data, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(data, &env) != nil || env.Error == nil {
		return "error", ""
	}
	return env.Error.Code, env.Error.Detail
}

// Clean keeps at most n bytes of printable text of what a client says of itself.
func Clean(s string, n int) string {
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
