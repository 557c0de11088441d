package rowlog

import (
	"os"
	"syscall"
)

// fdatasync makes the log's appended bytes durable, and its length with them.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// preallocate gives the file its blocks from off for n bytes ahead of the appends (its length
// with them, read as zeros): an fdatasync of bytes written there costs less than of bytes that
// grow the file (~0.125 against ~0.155 ms on ext4). A file system that cannot is appended to.
func preallocate(f *os.File, off, n int64) { _ = syscall.Fallocate(int(f.Fd()), 0, off, n) }
