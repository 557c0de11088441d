package local

import (
	"errors"
	"os"
	"testing"
)

// FailProcessLocks makes every process lock of this package fail until t ends (t must not be
// parallel: the lock is taken through a package variable).
func FailProcessLocks(t testing.TB) {
	was := lockProcess
	lockProcess = func(string) (*os.File, error) { return nil, errors.New("no room for a process lock") }
	t.Cleanup(func() { lockProcess = was })
}

// ReadAfterTheLease makes AcquireReading read every journal once the lease serves its readers,
// as it reads one too large to stay mapped in, until t ends (t must not be parallel).
func ReadAfterTheLease(t testing.TB) {
	was := readsChecked
	readsChecked = func(int64) bool { return false }
	t.Cleanup(func() { readsChecked = was })
}
