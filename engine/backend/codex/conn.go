package codex

import (
	"bufio"
	"context"
	"fmt"
	"io"
)

// Conn carries the JSON-RPC messages of one connection to an app server: lines on its stdio
// (LineConn), or the text frames of a WebSocket.
type Conn interface {
	// Read returns the next message. An error ends the connection: it is not called again.
	Read() ([]byte, error)
	// Write sends one message, within ctx where the transport can; one at a time.
	Write(ctx context.Context, msg []byte) error
}

// MaxMessage bounds one JSON-RPC message from the host: a longer one ends the connection
// rather than the process's memory.
const MaxMessage = 64 << 20

// LineConn is the Conn of an app server's stdio: one message a line.
func LineConn(r io.Reader, w io.Writer) Conn {
	return &lineConn{br: bufio.NewReaderSize(r, 1<<16), w: w}
}

type lineConn struct {
	br *bufio.Reader
	w  io.Writer
}

func (l *lineConn) Read() ([]byte, error) { return readLine(l.br, MaxMessage) }

// Write writes the message and its newline; ctx is not used: a pipe has no deadline.
func (l *lineConn) Write(_ context.Context, msg []byte) error {
	_, err := l.w.Write(append(msg, '\n'))
	return err
}

// readLine reads one line of at most limit bytes, its newline included. A longer line is an
// error: the bytes read so far are dropped and nothing more is read.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > limit {
			return nil, fmt.Errorf("a message longer than %d bytes", limit)
		}
		line = append(line, frag...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}
