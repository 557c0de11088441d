package rowlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// WriteOwnFile writes data to path, fsync'd, for a small file of crw's own beside a journal (the
// boot file, what a rebuild kept) whose absence says nothing. It writes only to a file of its
// own making: whatever was at path (the file before, a symlink, a hard link to another file, a
// FIFO, an empty directory) is taken away first, never written through nor waited on; what
// cannot be (a directory that holds something) is ErrCorrupt.
func WriteOwnFile(path string, data []byte) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s is in the way and cannot be taken away: %w", ErrCorrupt, path, err)
	}
	// O_EXCL and O_NOFOLLOW: what was put there since is refused, not written through.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = fdatasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
