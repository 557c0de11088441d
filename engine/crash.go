package engine

import (
	"os"
	"strconv"
	"syscall"

	"github.com/crw-dev/crw/store/local/journalfile"
)

// CrashAfterCommitEnv names the variable that makes a run's process kill itself (SIGKILL)
// right after its Nth journal commit: the crash tests use it to stop a run between any two
// commits.
const CrashAfterCommitEnv = "CRW_CRASH_AFTER_COMMIT"

func armCrashPoint(j *journalfile.Journal) {
	n, err := strconv.ParseUint(os.Getenv(CrashAfterCommitEnv), 10, 64)
	if err != nil || n == 0 {
		return
	}
	j.OnCommit(func(commits uint64) {
		if commits == n {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way; nothing more may happen
		}
	})
}
