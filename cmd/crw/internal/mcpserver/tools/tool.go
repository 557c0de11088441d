// Package tools is the tools of crw mcp: their arguments and answers (Go types whose schemas
// the SDK's jsonschema-go infers, every output schema made strict in one place), their
// descriptions, each call's arguments checked by crw's schema compiler before they are
// decoded, and what each tool does on the run service (package ops, as the crw flow commands
// of the same names do).
//
// It is over 1,500 lines because each tool is its arguments, its answer, its
// description and its call, side by side in one file per group of tools, and they share the
// one place that makes every schema strict and every error name the tool's arguments.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/wire"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
)

// Tool is one tool of the server: its name, what its description says, the member its answer
// goes in, whether it changes a run (a mutation: it takes a request_key, and the audit records
// it), its schemas, and how a call's arguments are read and done.
type Tool struct {
	Name, Title, Description string
	Payload                  string
	Mutation, Destructive    bool
	// InputSchema is the one inferred from the tool's input type, refined (enums, bounds);
	// OutputSchema the envelope of its answer's type, strict.
	InputSchema, OutputSchema json.RawMessage

	// input refines the inferred input schema (enums, bounds).
	input  func(map[string]any)
	decode func(args json.RawMessage) (any, error)
	run    func(ctx context.Context, c *Call, in any) (any, error)
}

// Decode checks a call's arguments against the input schema and decodes them into a new input:
// bad arguments are invalid_request.
func (t *Tool) Decode(args json.RawMessage) (any, error) { return t.decode(args) }

// Run does the call of an input Decode gave.
func (t *Tool) Run(ctx context.Context, c *Call, in any) (any, error) { return t.run(ctx, c, in) }

// Call is one tool call: who made it, and the run its error is about.
type Call struct {
	Who string
	Run string
}

// Keyed is the input of a mutation: its request key.
type Keyed interface{ Key() string }

// AboutRun is an input that names a run: its errors are about it.
type AboutRun interface {
	RunID() string
	SetRunID(string)
}

// define makes t the tool whose input is In and whose answer run gives. The input schema is the
// one inferred from In (refined by t.input), compiled by crw's schema compiler, which checks
// every call's arguments before they are decoded. The output schema is the envelope of Out,
// strict.
func define[In any, Out any](t Tool, run func(ctx context.Context, c *Call, in *In) (Out, error)) Tool {
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
		panic(fmt.Sprintf("mcpserver: tool %s: its input schema: %v", t.Name, err))
	}
	payload := infer[Out]()
	strict(payload)
	out := envelope(t.Payload, payload)
	outJSON, err := json.Marshal(out)
	if err != nil {
		panic(err)
	}
	t.InputSchema, t.OutputSchema = inJSON, outJSON
	t.decode = func(args json.RawMessage) (any, error) {
		v := new(In)
		if err := decode(args, validator, v); err != nil {
			return nil, err
		}
		return v, nil
	}
	t.run = func(ctx context.Context, c *Call, in any) (any, error) { return run(ctx, c, in.(*In)) }
	return t
}

// decode checks arguments against the tool's input schema and decodes them.
func decode(args json.RawMessage, v *schema.Validator, into any) error {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if len(args) > wire.MaxArguments {
		return errs.New(errs.InvalidRequest, "arguments: %d bytes; the limit is %d", len(args), wire.MaxArguments)
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
