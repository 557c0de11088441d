package codex

import (
	"bufio"
	"context"
	"fmt"
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
