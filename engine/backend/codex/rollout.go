package codex

import (
	"bufio"
	"bytes"
	"encoding/json"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/userfile"
)

// RolloutTokens reads a turn's usage from the thread's rollout file, where Codex records it
// after every model call (a token_usage_record per turn); the protocol gives it only live.
// ok is false when the file has none for the turn (or cannot be read).
func RolloutTokens(path, turnID string) (u journal.Tokens, ok bool) {
	// The path is the host's word: only a regular file is read, and a line longer than a usage
	// record can be is passed over, so /dev/zero or a huge line cannot exhaust memory.
	f, err := userfile.Open(path)
	if err != nil {
		return u, ok
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
				return u, ok
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
				u, ok = journal.Tokens{Input: x.Input, CachedInput: x.Cached, Output: x.Output, ReasoningOutput: x.Reasoning, Total: x.Total}.Bounded(), true
			}
		}
		if err != nil {
			return u, ok
		}
	}
}
