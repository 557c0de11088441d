package rowlog

import (
	"os"
	"syscall"
)

// fdatasync makes the log's appended bytes durable, and its length with them.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
