package appserver

import (
	"bufio"
	"bytes"
	"encoding/json"

	"github.com/crw-dev/crw/userfile"
)

// rolloutTokens reads a turn's usage from the thread's rollout file, where Codex records it
// after every model call; the protocol gives it only live. Zero when the file has none.
func rolloutTokens(path, turnID string) TokenUsage {
	var u TokenUsage
	// The path is the host's word: only a regular file is read, and a line longer than a usage
	// record can be is passed over, so /dev/zero or a huge line cannot exhaust memory.
	f, err := userfile.Open(path)
	if err != nil {
		return u
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			if err != nil {
				return u
			}
			continue
		}
		if bytes.Contains(line, []byte(`"token_usage_record"`)) && bytes.Contains(line, []byte(turnID)) {
			var rec struct {
				Type    string `json:"type"`
				Payload struct {
					TurnID string `json:"turn_id"`
					Usage  struct {
						Input     int64 `json:"input_tokens"`
						Cached    int64 `json:"cached_input_tokens"`
						Output    int64 `json:"output_tokens"`
						Reasoning int64 `json:"reasoning_output_tokens"`
						Total     int64 `json:"total_tokens"`
					} `json:"turn_token_usage"`
				} `json:"payload"`
			}
			if json.Unmarshal(line, &rec) == nil && rec.Type == "token_usage_record" && rec.Payload.TurnID == turnID {
				x := rec.Payload.Usage
				u = TokenUsage{TotalTokens: x.Total, InputTokens: x.Input, CachedInputTokens: x.Cached, OutputTokens: x.Output, ReasoningOutputTokens: x.Reasoning}
			}
		}
		if err != nil {
			return u
		}
	}
}
