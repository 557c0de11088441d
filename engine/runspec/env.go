package runspec

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/crw-dev/crw/errs"
)

// usableTempDir is the temporary folder a new run records (env.TMPDIR of its spec): the
// caller's $TMPDIR, else /tmp. It must be absolute, exist, be a folder and be writable.
func usableTempDir() (string, error) {
	dir := os.Getenv("TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	if err := CheckTempDir(dir); err != nil {
		return "", errs.New(errs.CapabilityUnavailable, "%v", err)
	}
	return dir, nil
}

// CheckTempDir refuses a temporary folder a run cannot use: not absolute, missing, not a
// folder, or not writable.
func CheckTempDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("TMPDIR %q is not an absolute path", dir)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("TMPDIR %s: does not exist", dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("TMPDIR %s: not a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".crw-probe-*")
	if err != nil {
		return fmt.Errorf("TMPDIR %s: not writable", dir)
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return nil
}

// NewRunID makes a run id that sorts by creation time, to the millisecond: 20261130-052301-
// then the milliseconds in three hex digits and three random ones (3e7a1b).
func NewRunID(now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	now = now.UTC()
	return fmt.Sprintf("%s-%03x%03x", now.Format("20060102-150405"), now.Nanosecond()/int(time.Millisecond), int(b[0])<<4|int(b[1])>>4)
}
