package tools

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/wire"
)

// anyJSON is the schema of a member that holds any JSON value: a workflow's input or result,
// an answer, a recorded output.
var anyJSON = &jsonschema.Schema{Description: "any JSON value"}

// infer is the schema of T as the SDK infers it (github.com/google/jsonschema-go), a
// json.RawMessage member being any JSON value, as a JSON object to post-process.
func infer[T any]() map[string]any {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): anyJSON,
	}})
	if err != nil {
		panic(fmt.Sprintf("mcpserver: the schema of %v: %v", reflect.TypeFor[T](), err))
	}
	data, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		panic(err)
	}
	return m
}

// strict makes a schema follow crw's strict structured-output rules (engine/schema.CheckStrict)
// in place: every object refuses other properties and requires all of its own, one that was
// optional being nullable instead. It is the one place output schemas are shaped; the tests
// check every tool's with CheckStrict.
func strict(s map[string]any) {
	if isObject(s) {
		s["additionalProperties"] = false
		props, _ := s["properties"].(map[string]any)
		var required []any
		if r, ok := s["required"].([]any); ok {
			required = r
		}
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if !slices.Contains(required, any(name)) {
				nullable(props[name].(map[string]any))
				required = append(required, name)
			}
		}
		if props != nil {
			s["required"] = required
		}
	}
	for _, key := range []string{"properties", "$defs"} {
		if m, ok := s[key].(map[string]any); ok {
			for _, sub := range m {
				strict(sub.(map[string]any))
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		strict(items)
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			strict(a.(map[string]any))
		}
	}
}

// nullable lets a schema take null too.
func nullable(s map[string]any) {
	switch t := s["type"].(type) {
	case string:
		if t != "null" {
			s["type"] = []any{"null", t}
		}
	case []any:
		if !slices.Contains(t, any("null")) {
			s["type"] = append([]any{"null"}, t...)
		}
	case nil:
		if alts, ok := s["anyOf"].([]any); ok {
			s["anyOf"] = append(alts, map[string]any{"type": "null"})
		}
		// No type and no anyOf: any value, null included.
	}
}

func isObject(s map[string]any) bool {
	switch t := s["type"].(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return s["properties"] != nil
}

// envelope is the output schema of a tool whose answer, payload, is the member name: an object
// of that member (null on an error) and error (null unless the call failed), so that an error's
// structured content satisfies the schema too.
func envelope(name string, payload map[string]any) map[string]any {
	nullable(payload)
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			name:    payload,
			"error": errorSchema(),
		},
		"required":             []any{name, "error"},
		"additionalProperties": false,
	}
}

func errorSchema() map[string]any {
	s := infer[wire.ToolError]()
	strict(s)
	nullable(s)
	return s
}

// property is the schema of a property of an object schema, to refine it.
func property(s map[string]any, name string) map[string]any {
	props, _ := s["properties"].(map[string]any)
	p, ok := props[name].(map[string]any)
	if !ok {
		panic("mcpserver: no property " + name)
	}
	return p
}
