package appserver

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadLineBoundsAMessage: a line up to the limit is read whole, across the reader's
// buffer; a longer one is an error, not an allocation of its size.
func TestReadLineBoundsAMessage(t *testing.T) {
	in := strings.Repeat("a", 100) + "\n" + strings.Repeat("b", 101) + "\n"
	br := bufio.NewReaderSize(strings.NewReader(in), 16)
	line, err := readLine(br, 101)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("a", 100)+"\n", string(line))
	_, err = readLine(br, 101)
	assert.EqualError(t, err, "a message longer than 101 bytes")
}

// TestTurnsStopsAfterItsPageLimit: a host that keeps giving a next cursor gets an error after
// maxTurnPages pages, not a resume that reads for ever.
func TestTurnsStopsAfterItsPageLimit(t *testing.T) {
	c, s := newPipeClient(t, nil)
	go func() {
		for page := 1; page <= maxTurnPages; page++ {
			req := s.read(t)
			s.say(fmt.Sprintf(`{"id":%v,"result":{"data":[{"id":"u%d","status":"completed"}],"nextCursor":"p%d"}}`, req["id"], page, page))
		}
	}()
	turns, err := c.Turns(context.Background(), "th", nil)
	assert.Nil(t, turns)
	assert.EqualError(t, err, "appserver: thread th: the host gave more than 10000 pages of turns")
}

// TestRolloutTokensReadsOnlyARegularFile: a rollout path the host names that is a device, or a
// file with a line longer than the reader's buffer, is read without growing memory; the usage
// record after the long line is still found.
func TestRolloutTokensReadsOnlyARegularFile(t *testing.T) {
	assert.Equal(t, TokenUsage{}, rolloutTokens("/dev/zero", "u1"))
	path := filepath.Join(t.TempDir(), "rollout.jsonl")
	record := `{"type":"token_usage_record","payload":{"turn_id":"u1","turn_token_usage":{"input_tokens":7,"output_tokens":2,"total_tokens":9}}}`
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("x", 1<<20)+"\n"+record+"\n"), 0o600))
	assert.Equal(t, TokenUsage{TotalTokens: 9, InputTokens: 7, OutputTokens: 2}, rolloutTokens(path, "u1"))
}
