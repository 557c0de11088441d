package codex

import (
	"context"
	"encoding/json"
)

// ServerRequest is a request the app server made of crw (an approval, an elicitation, a
// question for the user) and how crw answered it.
type ServerRequest struct {
	Method   string
	ThreadID string
	TurnID   string
	Params   json.RawMessage
	Answer   string // what crw answered: decline, or an error for a request it does not serve; "" from an observer
}

// answer answers a server request at once: crw never approves, never grants and has no user
// to ask, so the server is never left waiting. An observer leaves it to the host's own client.
func (c *Client) answer(m *inbound) {
	if c.observer {
		c.told(m, "")
		return
	}
	var result any
	var rpcErr *RPCError
	answer := "decline"
	switch m.Method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
		result = map[string]any{"decision": "decline"}
	case "execCommandApproval", "applyPatchApproval":
		result = map[string]any{"decision": map[string]any{"denied": map[string]string{"rejection": "crw runs unattended and declines every approval"}}}
	case "mcpServer/elicitation/request":
		result = map[string]any{"action": "decline"}
	case "item/tool/requestUserInput":
		result = map[string]any{"answers": map[string]any{}}
	case "item/permissions/requestApproval":
		result = map[string]any{"permissions": map[string]any{}}
	case "item/tool/call":
		result = map[string]any{"success": false, "contentItems": []any{}}
	default:
		rpcErr = &RPCError{Code: -32601, Message: "crw does not serve " + m.Method}
		answer = "error"
	}
	msg := struct {
		ID     json.RawMessage `json:"id"`
		Result any             `json:"result,omitempty"`
		Error  *RPCError       `json:"error,omitempty"`
	}{m.ID, result, rpcErr}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	c.write(ctx, msg) // a broken pipe shows as the end of the output
	cancel()
	c.told(m, answer)
}

// told tells onRequest of a server request and of what it was answered.
func (c *Client) told(m *inbound, answer string) {
	if c.onRequest != nil {
		var p struct {
			ThreadID string `json:"threadId"`
			TurnID   string `json:"turnId"`
		}
		json.Unmarshal(m.Params, &p)
		c.onRequest(ServerRequest{Method: m.Method, ThreadID: p.ThreadID, TurnID: p.TurnID, Params: m.Params, Answer: answer})
	}
}
