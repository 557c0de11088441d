package rowlog

import (
	"os"
	"syscall"
)

// fdatasync makes the log's appended bytes durable, and its length with them.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// zeros is what preallocate writes ahead of the appends.
var zeros [64 << 10]byte

// preallocate writes zeros from off for n bytes ahead of the appends (the file's length with
// them): an fdatasync of bytes written over blocks that hold data is a flush of those bytes
// alone, where one of bytes that grow the file, or that land in blocks fallocate reserved
// (unwritten extents, which the write converts), also commits the file system's journal. On
// ext4 under a bbolt file's writes, that is ~0.23 against ~0.26 ms a commit (~0.155 ms when
// the file grows). Zeros that cannot be written are not: the appends then grow the file.
func preallocate(f *os.File, off, n int64) {
	for n > 0 {
		w := min(n, int64(len(zeros)))
		if _, err := f.WriteAt(zeros[:w], off); err != nil {
			return
		}
		off, n = off+w, n-w
	}
}
