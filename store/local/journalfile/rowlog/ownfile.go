package rowlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// WriteOwnFile writes data to path, fsync'd, for a small file of crw's own beside a journal (the
// boot file, what a rebuild kept) whose absence says nothing. It writes only to a regular file
// of its own making: whatever else is at path (a symlink, a FIFO, an empty directory) is taken
// away first, never written through nor waited on; what cannot be (a directory that holds
// something) is ErrCorrupt.
func WriteOwnFile(path string, data []byte) error {
	if info, err := os.Lstat(path); err == nil && !info.Mode().IsRegular() {
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("%w: %s is in the way and cannot be taken away: %w", ErrCorrupt, path, err)
		}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// O_NOFOLLOW and O_NONBLOCK: what was put there since the check is refused, not followed
	// nor waited on.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return err
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		_ = f.Close()
		return fmt.Errorf("%w: %s is not a regular file", ErrCorrupt, path)
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
