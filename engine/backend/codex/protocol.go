package codex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/crw-dev/crw/journal"
)

// The app-server protocol (v2) as far as crw reads it. Messages carry many more fields, and
// new ones appear between releases: decoding ignores what is not listed here.

// ThreadInfo is a thread as the host reports it.
type ThreadInfo struct {
	ID   string `json:"id"`
	Path string `json:"path"` // the rollout file; "" for an ephemeral thread
}

// ThreadResponse answers thread/start, thread/resume and thread/fork.
type ThreadResponse struct {
	Thread          ThreadInfo `json:"thread"`
	Model           string     `json:"model"`
	ReasoningEffort string     `json:"reasoningEffort"`
	Cwd             string     `json:"cwd"`
}

// Turn statuses.
const (
	TurnCompleted   = "completed"
	TurnFailed      = "failed"
	TurnInterrupted = "interrupted"
	TurnInProgress  = "inProgress"
)

// Turn is a turn as thread/turns/list and turn/completed report it.
type Turn struct {
	ID        string     `json:"id"`
	Status    string     `json:"status"`
	Error     *TurnError `json:"error"`
	Items     []Item     `json:"items"`
	StartedAt int64      `json:"startedAt"` // Unix seconds
}

// TurnError is why a turn failed.
type TurnError struct {
	Message        string          `json:"message"`
	CodexErrorInfo json.RawMessage `json:"codexErrorInfo"`
}

// Kind is the codexErrorInfo's name: the string itself, or the one key of an object such as
// {"httpConnectionFailed":{"httpStatusCode":502}}; "" when the host gave none.
func (e *TurnError) Kind() string {
	if e == nil {
		return ""
	}
	return InfoKind(e.CodexErrorInfo)
}

// Item is a thread item; only user and agent messages matter to crw.
type Item struct {
	Type    string `json:"type"` // userMessage, agentMessage, reasoning, commandExecution, ...
	ID      string `json:"id"`
	Text    string `json:"text"`  // agentMessage
	Phase   string `json:"phase"` // agentMessage: commentary, final_answer, or "" (null)
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"` // userMessage
	// collabAgentToolCall: the multi-agent tool (spawnAgent, sendInput, wait, closeAgent), its
	// status, the threads it reached and the message it sent.
	Tool              string   `json:"tool"`
	Status            string   `json:"status"`
	ReceiverThreadIDs []string `json:"receiverThreadIds"`
	Prompt            string   `json:"prompt"`
}

// UserText is a user message's text.
func (it *Item) UserText() string {
	var b bytes.Buffer
	for _, c := range it.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// FinalAnswer is a turn's answer (see Answer); "" when it has none.
func FinalAnswer(items []Item) string {
	text, _ := Answer(items)
	return text
}

// Answer is a turn's answer: its last final_answer agent message or, from a provider that sets
// no phase, its last message without one when no commentary came before it. A commentary
// message is never the answer. ok is false when the turn has none.
func Answer(items []Item) (text string, ok bool) {
	var final, plain string
	hasFinal, hasPlain, commentary := false, false, false
	for _, it := range items {
		if it.Type != "agentMessage" {
			continue
		}
		switch it.Phase {
		case "final_answer":
			final, hasFinal = it.Text, true
		case "commentary":
			commentary = true
		case "":
			if !commentary {
				plain, hasPlain = it.Text, true
			}
		}
	}
	if hasFinal {
		return final, true
	}
	return plain, hasPlain
}

// TokenUsage is one breakdown of thread/tokenUsage/updated.
type TokenUsage struct {
	TotalTokens           int64 `json:"totalTokens"`
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
}

func (u TokenUsage) add(v TokenUsage) TokenUsage {
	return TokenUsage{u.TotalTokens + v.TotalTokens, u.InputTokens + v.InputTokens, u.CachedInputTokens + v.CachedInputTokens,
		u.OutputTokens + v.OutputTokens, u.ReasoningOutputTokens + v.ReasoningOutputTokens}
}

// Journal is the usage as the journal records it.
func (u TokenUsage) Journal() journal.Tokens {
	return journal.Tokens{Input: u.InputTokens, CachedInput: u.CachedInputTokens, Output: u.OutputTokens,
		ReasoningOutput: u.ReasoningOutputTokens, Total: u.TotalTokens}.Bounded()
}

// ThreadParams are the settings thread/start, thread/resume and thread/fork share.
type ThreadParams struct {
	Model          string `json:"model,omitempty"`
	Cwd            string `json:"cwd,omitempty"`
	ApprovalPolicy string `json:"approvalPolicy,omitempty"`
	Sandbox        string `json:"sandbox,omitempty"`
	Config         Config `json:"config,omitempty"`
}

// Config is a list of config overrides (dotted keys) that keeps its order on the wire.
type Config []Setting

// Setting is one config override.
type Setting struct {
	Key   string
	Value any
}

// MarshalJSON implements json.Marshaler.
func (c Config) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, s := range c {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(s.Key)
		v, err := json.Marshal(s.Value)
		if err != nil {
			return nil, fmt.Errorf("config %s: %w", s.Key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// EnvConfig gives a run's environment entries to the shells of a thread, TMPDIR first.
func EnvConfig(env map[string]string) Config {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == "TMPDIR") != (names[j] == "TMPDIR") {
			return names[i] == "TMPDIR"
		}
		return names[i] < names[j]
	})
	c := make(Config, len(names))
	for i, k := range names {
		c[i] = Setting{"shell_environment_policy.set." + k, env[k]}
	}
	return c
}
