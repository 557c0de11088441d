// Package mcptest drives crw's MCP server from the SDK's own client for tests: it lists the
// tools, checks their schemas against crw's strict rules and schema compiler, and calls them,
// validating every answer, an error's too, against the tool's output schema.
package mcptest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/schema"
)

// Tools are the tools crw mcp serves, in the order the SDK lists them (by name).
var Tools = []string{"answer", "audit", "cancel", "capabilities", "dispatched", "effects", "inspect", "list", "logs", "next", "recover", "resume", "shadow", "show", "start", "status", "trace"}

// Mutations are the tools that take a request_key.
var Mutations = []string{"start", "dispatched", "answer", "cancel", "resume", "recover"}

// Client is a client session on crw's MCP server, with its tools' schemas compiled.
type Client struct {
	t       testing.TB
	Session *mcp.ClientSession
	Tools   map[string]*mcp.Tool
	Listed  []string // the tools' names, as listed
	outputs map[string]*schema.Validator
}

// Connect connects the SDK's client, named name, over transport and lists the tools.
func Connect(t testing.TB, ctx context.Context, name string, transport mcp.Transport) *Client {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	cs, err := client.Connect(ctx, transport, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	c := &Client{t: t, Session: cs, Tools: map[string]*mcp.Tool{}, outputs: map[string]*schema.Validator{}}
	res, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	for _, tool := range res.Tools {
		c.Listed = append(c.Listed, tool.Name)
		c.Tools[tool.Name] = tool
		out, err := json.Marshal(tool.OutputSchema)
		require.NoError(t, err)
		v, err := schema.Compile(out)
		require.NoError(t, err, "tool %s: its output schema does not compile", tool.Name)
		c.outputs[tool.Name] = v
	}
	return c
}

// CheckSchemas requires every tool's output schema to pass crw's strict check (the one
// crw:lib/schemas exports get) and every input schema to be a valid JSON Schema that crw's
// schema compiler takes, of type object.
func (c *Client) CheckSchemas() {
	t := c.t
	t.Helper()
	for _, name := range c.Listed {
		tool := c.Tools[name]
		out, err := json.Marshal(tool.OutputSchema)
		require.NoError(t, err)
		violations, err := schema.CheckStrict(out)
		require.NoError(t, err)
		require.Empty(t, violations, "tool %s: its output schema is not strict: %s", name, out)

		in, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		_, err = schema.Compile(in)
		require.NoError(t, err, "tool %s: crw's compiler refuses its input schema %s", name, in)
		var s jsonschema.Schema
		require.NoError(t, json.Unmarshal(in, &s), name)
		_, err = s.Resolve(nil)
		require.NoError(t, err, "tool %s: its input schema is not valid", name)
		require.Equal(t, "object", s.Type, name)
		require.NotEmpty(t, tool.Description, name)
	}
}

// Answer is a tool's answer: its structured content, and whether it is an error.
type Answer struct {
	IsError bool
	Content map[string]any
	Text    string
}

// Error is the answer's error member (nil when it has none).
func (a Answer) Error() map[string]any {
	e, _ := a.Content["error"].(map[string]any)
	return e
}

// Code is the answer's error code ("" for a success).
func (a Answer) Code() string {
	code, _ := a.Error()["code"].(string)
	return code
}

// Get is the value at a dotted path of the structured content.
func (a Answer) Get(path string) any {
	var v any = a.Content
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// Call calls a tool with args (anything that marshals to JSON, a json.RawMessage sent as it
// is) and requires its answer to satisfy the tool's output schema.
func (c *Client) Call(ctx context.Context, name string, args any) Answer {
	c.t.Helper()
	res, err := c.Session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(c.t, err, "tools/call %s", name)
	return c.check(name, res)
}

func (c *Client) check(name string, res *mcp.CallToolResult) Answer {
	t := c.t
	t.Helper()
	data, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	v := c.outputs[name]
	require.NotNil(t, v, "no tool %s", name)
	require.NoError(t, v.Validate(data), "tool %s answered what its output schema refuses: %s", name, data)
	a := Answer{IsError: res.IsError}
	require.NoError(t, json.Unmarshal(data, &a.Content))
	require.Len(t, res.Content, 1, "tool %s: one text content", name)
	text, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok)
	a.Text = text.Text
	require.JSONEq(t, string(data), a.Text, "the text content is the structured content's JSON")
	require.Equal(t, res.IsError, a.Error() != nil, "tool %s: isError goes with the error member: %s", name, data)
	return a
}

// Until calls a tool every 50 ms until done says its answer will do, and returns that answer.
// The bound only keeps a broken run from hanging the test.
func (c *Client) Until(ctx context.Context, name string, args any, done func(Answer) bool) Answer {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		a := c.Call(ctx, name, args)
		if done(a) {
			return a
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s never answered as expected; last: %s", name, a.Text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
