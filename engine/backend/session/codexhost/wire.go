package codexhost

import (
	"encoding/json"

	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/session/host"
)

// wireThread is a Thread as thread/read and thread/list send it (Codex 0.169.0); null fields
// decode as "", and fields not listed are ignored.
type wireThread struct {
	ID              string `json:"id"`
	ParentThreadID  string `json:"parentThreadId"`
	AgentRole       string `json:"agentRole"`
	Model           string `json:"model"`
	ReasoningEffort string `json:"reasoningEffort"`
	Cwd             string `json:"cwd"`
	Path            string `json:"path"`
	Preview         string `json:"preview"`
	Status          struct {
		Type string `json:"type"`
	} `json:"status"`
	Turns []codex.Turn `json:"turns"`
}

// session is the thread as the session backend reads it; withTurns keeps its turns (an empty
// list, not nil, for a thread that has none).
func (w *wireThread) session(withTurns bool) host.Thread {
	t := host.Thread{ID: w.ID, ParentThreadID: w.ParentThreadID, AgentRole: w.AgentRole, Model: w.Model,
		Effort: w.ReasoningEffort, Cwd: w.Cwd, RolloutPath: w.Path, Status: w.Status.Type, Preview: w.Preview}
	if withTurns {
		t.Turns = make([]host.Turn, len(w.Turns))
		for i := range w.Turns {
			t.Turns[i] = turn(&w.Turns[i])
		}
	}
	return t
}

func turn(w *codex.Turn) host.Turn {
	t := host.Turn{ID: w.ID, Status: w.Status}
	for i := range w.Items {
		if w.Items[i].Type == "userMessage" {
			t.FirstUserMessage = w.Items[i].UserText()
			break
		}
	}
	t.Answer, t.HasAnswer = codex.Answer(w.Items)
	if e := w.Error; e != nil {
		t.Error = &codex.TurnError{Message: e.Message}
		if info := e.CodexErrorInfo; len(info) > 0 && string(info) != "null" {
			t.Error.CodexErrorInfo = append(json.RawMessage(nil), info...)
		}
	}
	return t
}
