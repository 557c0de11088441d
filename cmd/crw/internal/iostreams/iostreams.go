// Package iostreams is the streams a crw command reads and writes, injected so that tests can
// hold them in buffers.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams is a process's standard streams.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// ErrIsTTY tells whether live progress may redraw a line.
	ErrIsTTY bool
}

// System is the process's own streams.
func System() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, ErrIsTTY: term.IsTerminal(int(os.Stderr.Fd()))}
}

// Test is streams on buffers: what a command reads, and what it wrote to stdout and stderr.
func Test() (ios *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}
