package enginetest

import (
	"os"
	"syscall"
	"testing"
)

// FastTmp is a folder for a test's repositories and state folders, removed at its end: in
// $envVar when it is set, else in /dev/shm when it is a memory file system with room, else
// the test's temporary folder. Git's checkouts and the journal's syncs take many times longer
// on some virtual disks than in memory, and a test of many runs waits on them.
func FastTmp(t testing.TB, envVar, prefix string) string {
	t.Helper()
	base := os.Getenv(envVar)
	if base == "" {
		var fs syscall.Statfs_t
		const tmpfsMagic = 0x01021994
		if syscall.Statfs("/dev/shm", &fs) == nil && fs.Type == tmpfsMagic && fs.Bavail*uint64(fs.Bsize) > 4<<30 &&
			syscall.Access("/dev/shm", 2 /* W_OK */) == nil {
			base = "/dev/shm"
		}
	}
	if base == "" {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp(base, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
