// Package userfile reads the files a user names on the command line or in a workflow (workflow
// modules, --input @FILE, answers files, role tables, schemas) with a bound on their size. A
// path that names a device, a FIFO or a directory is refused before it is opened for reading,
// so that /dev/zero or a pipe cannot hang crw or exhaust its memory.
package userfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Limits of the files crw reads whole. They are far above what the files hold in practice and
// far below what would hurt the host.
const (
	MaxModule     = 4 << 20  // a workflow module (JS or TS source): a literal of 3 MB can take 2 GB in goja
	MaxJSONModule = 1 << 20  // a JSON module: each value costs goja hundreds of bytes
	MaxData       = 64 << 20 // an input, answers, role table or schema file
)

// ErrTooLarge is wrapped by the error of a file over its limit.
var ErrTooLarge = errors.New("file too large")

// ErrNotRegular is wrapped by the error of a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Open opens the regular file at path for reading, for a file read as a stream (a trace),
// or returns an error when it is not one. The error does not repeat the path.
func Open(path string) (*os.File, error) {
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. It changes
	// nothing for a regular file, the only kind read.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err
		}
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w (%s)", ErrNotRegular, kind(info.Mode()))
	}
	return f, nil
}

// Read returns the content of the regular file at path, or an error when it is not one or holds
// more than limit bytes. The error does not repeat the path: callers say which file and what for.
func Read(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, info.Size(), limit)
	}
	// The size can change between Stat and the read: read at most one byte past the limit.
	return ReadStream(f, limit)
}

// ReadStream reads r to its end, or fails once it has given more than limit bytes: what a
// command reads from its stdin, which may be a pipe.
func ReadStream(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	return data, nil
}

func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	default:
		return "mode " + m.String()
	}
}
