package local

import (
	"fmt"
	"os"

	"github.com/crw-dev/crw/store/local/journalfile"
	"github.com/crw-dev/crw/store/local/journalfile/rowlog"
)

// RestartMachine plays, on the journal of run, a restart of the machine after its last
// process died there (the simulator's fault, engine/sim, after CrashAfterCommit's): its log
// reads as written before the restart (rowlog.PlayRestart), and its bbolt file, whose commits
// were not fsync'd, loses what a power loss may take of them. tear picks, deterministically,
// how much: its low two bits the file intact, cut short at a page, a run of pages zeroed or
// overwritten with other bytes; its third bit an append cut short at the log's end; the rest
// where. The next open to write must make the file again from the log and lose no row the log
// holds; until then readers say so (journal_unrecovered). A journal whose last writer closed
// it, its file fsync'd, loses nothing: torn is false then, and readers read it as before.
func (s *Store) RestartMachine(run string, tear uint64) (torn bool, err error) {
	journalPath := s.path(run, JournalFile)
	tornTail := 0
	if tear&4 != 0 {
		tornTail = 1 + int(tear>>3)%4096
	}
	closed, err := rowlog.PlayRestart(s.path(run, JournalLog), tornTail)
	if err != nil || closed {
		return false, err
	}
	f, err := os.OpenFile(journalPath, os.O_RDWR, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return false, err
	}
	const page = 4096
	pages := max(info.Size()/page, 1)
	at := int64(tear>>3) % pages * page
	span := (1 + int64(tear>>13)%8) * page
	switch tear & 3 {
	case 1:
		err = f.Truncate(at)
	case 2, 3:
		junk := make([]byte, span)
		for i := range junk {
			if tear&3 == 3 {
				junk[i] = byte(tear>>uint(i%7)) ^ byte(i)
			}
		}
		_, err = f.WriteAt(junk, at)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return false, fmt.Errorf("run %s: play a machine's restart on %s: %w", run, journalPath, err)
	}
	return true, nil
}

// KillNextRecovery makes the next open to write of run's journal that makes its file again from
// its log (after RestartMachine) stop at step (journalfile.RebuildKept, RebuildRenamed), as its
// process killed there would: the simulator's fault (engine/sim).
func (s *Store) KillNextRecovery(run, step string) {
	journalfile.FailNextRebuild(s.path(run, JournalFile), step)
}
