package mockmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// OwnerStep is one model response of an owner thread: a call of a multi_agent_v1 tool, of a
// tool in another namespace (an MCP server's: Namespace mcp__<server>), or (without Tool) its
// final message.
type OwnerStep struct {
	Tool string         // spawn_agent, wait_agent, send_input, close_agent, ..., or exec_command (a shell command)
	Args map[string]any // the tool's arguments; a wait_agent without targets waits for every agent spawned so far
	Text string         // the final message, in the final_answer phase
	// Namespace is the namespace of Tool: "" for multi_agent_v1 (none for exec_command).
	Namespace string
}

// Own scripts the thread threadID as an owner: its model request that carries n function call
// outputs is answered with steps[n], so step n follows the output of step n-1; past the last
// step it ends its turn with "done". The requests of every other thread, its subagents among
// them, are answered as before. Call it before the owner's first turn.
func (s *Server) Own(threadID string, steps ...OwnerStep) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owners == nil {
		s.owners = map[string][]OwnerStep{}
	}
	s.owners[threadID] = steps
}

// OwnPrompt scripts as an owner every thread whose last user message contains text (a
// subagent's, whose id is not known before it is spawned), as Own does a thread by its id.
func (s *Server) OwnPrompt(text string, steps ...OwnerStep) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.promptOwners == nil {
		s.promptOwners = map[string][]OwnerStep{}
	}
	s.promptOwners[text] = steps
}

func (s *Server) ownerSteps(threadID, prompt string) []OwnerStep {
	s.mu.Lock()
	defer s.mu.Unlock()
	if steps, ok := s.owners[threadID]; ok {
		return steps
	}
	for text, steps := range s.promptOwners {
		if strings.Contains(prompt, text) {
			return steps
		}
	}
	return nil
}

// ownerStep answers an owner's request with the step its function call outputs have reached.
// A spawn's output names the agent ({"agent_id": ...}); the call ids are the step's index, so
// the outputs tell which spawns returned an agent.
func (s *Server) ownerStep(w http.ResponseWriter, req *Request, steps []OwnerStep, outputs map[string]string) {
	step := OwnerStep{Text: "done"}
	if n := len(outputs); n < len(steps) {
		step = steps[n]
	}
	if step.Tool == "" {
		req.Answer = "owner:final"
		s.record(*req)
		s.stream(w, message(step.Text))
		return
	}
	args := step.Args
	if step.Tool == "wait_agent" && args["targets"] == nil {
		var agents []string
		for i := range steps {
			var out struct {
				AgentID string `json:"agent_id"`
			}
			if json.Unmarshal([]byte(outputs[callID(i)]), &out) == nil && out.AgentID != "" {
				agents = append(agents, out.AgentID)
			}
		}
		args = map[string]any{"targets": agents}
		for k, v := range step.Args {
			args[k] = v
		}
	}
	data, _ := json.Marshal(args)
	req.Answer = "owner:" + step.Tool
	s.record(*req)
	id := callID(len(outputs))
	call := map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": id, "namespace": "multi_agent_v1",
		"name": step.Tool, "arguments": string(data), "status": "completed"}
	switch {
	case step.Namespace != "":
		call["namespace"] = step.Namespace
	case step.Tool == "exec_command":
		delete(call, "namespace") // Codex's shell tool: {"cmd": ...}, run in the thread's cwd
	}
	s.stream(w, call)
}

func callID(step int) string { return fmt.Sprintf("call_owner_%d", step) }

func message(text string) map[string]any {
	return map[string]any{"type": "message", "role": "assistant", "status": "completed", "phase": "final_answer",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

// stream answers one output item and response.completed, with a small usage.
func (s *Server) stream(w http.ResponseWriter, item map[string]any) {
	resp := s.open(w)
	if item["type"] == "message" {
		_, item["id"] = s.ids()
	}
	event(w, map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	event(w, map[string]any{"type": "response.completed", "response": map[string]any{"id": resp, "object": "response",
		"status": "completed", "usage": map[string]any{"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}}})
}

// Role is a Codex agent role (an [agents.<name>] of config.toml) whose file pins a model and effort.
type Role struct {
	Name, Description, Model, Effort string
}
