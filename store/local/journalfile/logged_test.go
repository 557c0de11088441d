package journalfile_test

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local/journalfile"
	"github.com/crw-dev/crw/store/local/journalfile/journalfiletest"
	"github.com/crw-dev/crw/store/local/journalfile/rowlog"
)

// loggedJournal writes n sample rows to a new journal, one commit each, and lets it go as a
// killed process would: no checkpoint after its rows. It returns the path and the rows' JSON.
func loggedJournal(t *testing.T, n int) (string, []string) {
	t.Helper()
	return loggedJournalOf(t, "run-logged", n)
}

func loggedJournalOf(t *testing.T, run string, n int) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := journalfile.Create(path, run)
	require.NoError(t, err)
	writeSample(t, j, n)
	want := rowsJSON(t, j)
	journalfile.Abandon(j)
	return path, want
}

// closedJournal writes n sample rows to a new journal of run, a commit each, and closes it.
func closedJournal(t *testing.T, run string, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := journalfile.Create(path, run)
	require.NoError(t, err)
	writeSample(t, j, n)
	require.NoError(t, j.Close())
	return path
}

// writeSample writes n sample rows, a commit each.
func writeSample(t *testing.T, j *journalfile.Journal, n int) {
	t.Helper()
	for _, r := range journalfiletest.SampleRows(n) {
		_, err := j.Write(r)
		require.NoError(t, err)
	}
}

func rowsJSON(t *testing.T, j *journalfile.Journal) []string {
	t.Helper()
	raw, err := j.Raw(1, 1<<30)
	require.NoError(t, err)
	out := make([]string, len(raw))
	for i, r := range raw {
		out[i] = string(r)
	}
	return out
}

// reopened opens the journal at path to write, reads its rows and summary, and closes it.
func reopened(t *testing.T, path string) ([]string, *journal.Summary) {
	t.Helper()
	j, err := journalfile.Open(path)
	require.NoError(t, err)
	rows := rowsJSON(t, j)
	sum, err := j.Summary()
	require.NoError(t, err)
	require.NoError(t, j.Close())
	journalfiletest.Check(t, path)
	return rows, sum
}

// playBoot makes rowlog read the boot id given, as a machine that restarted would have.
func playBoot(t *testing.T, id string) {
	t.Helper()
	saved := rowlog.BootIDFile
	t.Cleanup(func() { rowlog.BootIDFile = saved })
	rowlog.BootIDFile = filepath.Join(t.TempDir(), "boot_id")
	require.NoError(t, os.WriteFile(rowlog.BootIDFile, []byte(id+"\n"), 0o600))
}

// A journal keeps a log beside its file, and a commit is durable by the log's fsync alone: a
// writer killed after its commits leaves a file its next open reads as it is.
func TestAWriterKilledLeavesItsRows(t *testing.T) {
	path, want := loggedJournal(t, 30)
	_, err := os.Stat(path + "-log")
	require.NoError(t, err, "the journal keeps a log")
	got, sum := reopened(t, path)
	assert.Equal(t, want, got)
	assert.Equal(t, uint64(30), sum.LastSeq)
}

// After the machine restarted, a file whose commits were not fsync'd since its last checkpoint
// may be torn: it is made again from the log, rows, summary and index, whatever it holds.
func TestAFileTornByAMachineCrashIsMadeAgainFromTheLog(t *testing.T) {
	for name, tear := range map[string]func(t *testing.T, path string){
		"its rows' pages zeroed": func(t *testing.T, path string) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			for i := 4 * 4096; i < len(data); i++ {
				data[i] = 0
			}
			require.NoError(t, os.WriteFile(path, data, 0o600))
		},
		"its last rows lost": func(t *testing.T, path string) {
			editFile(t, path, func(tx *bbolt.Tx) error {
				for seq := byte(31); seq <= 40; seq++ {
					if err := tx.Bucket([]byte("rows")).Delete([]byte{0, 0, 0, 0, 0, 0, 0, seq}); err != nil {
						return err
					}
				}
				return nil
			})
		},
	} {
		t.Run(name, func(t *testing.T) {
			playBoot(t, "boot-1")
			path, want := loggedJournal(t, 40)
			// What the file held before it was torn, read from a copy.
			intact := filepath.Join(t.TempDir(), "journal.db")
			copyJournal(t, path, intact)
			_, intactSum := reopened(t, intact)
			tear(t, path)
			playBoot(t, "boot-2")
			got, sum := reopened(t, path)
			assert.Equal(t, want, got)
			assert.Equal(t, uint64(40), sum.LastSeq)
			assert.Equal(t, intactSum.Calls, sum.Calls)
			assert.Equal(t, intactSum.Tokens, sum.Tokens)
			_, err := os.Stat(path + ".rebuilt")
			assert.ErrorIs(t, err, os.ErrNotExist, "the file made again is renamed into place")
		})
	}
}

// A writer closed cleanly leaves a checkpoint: its file is trusted after a restart, and not
// made again (the same file, not a new one, is opened).
func TestACleanCloseIsTrustedAfterARestart(t *testing.T) {
	playBoot(t, "boot-1")
	path := closedJournal(t, "run-clean", 10)
	before, err := os.Stat(path)
	require.NoError(t, err)
	playBoot(t, "boot-2")
	rows, _ := reopened(t, path)
	assert.Len(t, rows, 10)
	after, err := os.Stat(path)
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "the file was made again")
}

// A writer killed between its commit to the file and its log's fsync leaves rows in the file
// the log lacks: the next open logs them, so a later restart makes the file again with them.
func TestRowsTheLogLacksAreLoggedAtTheOpen(t *testing.T) {
	playBoot(t, "boot-1")
	path, want := loggedJournal(t, 20)
	// The log as it was before its last commit's frame: 19 rows.
	cutLogAfter(t, path, 19)
	got, _ := reopened(t, path)
	require.Equal(t, want, got)
	// Killed again, and the machine restarted: the file is made from the log alone.
	j, err := journalfile.Open(path)
	require.NoError(t, err)
	_, err = j.Write(&journal.Row{Type: journal.TypeWarning, Reason: "after"})
	require.NoError(t, err)
	journalfile.Abandon(j)
	playBoot(t, "boot-2")
	got, sum := reopened(t, path)
	require.Len(t, got, 21)
	assert.Equal(t, want, got[:20])
	assert.Equal(t, uint64(21), sum.LastSeq)
}

// A log ahead of its file (a file put back from an older copy) gives the file its rows.
func TestALogAheadOfItsFileGivesItsRows(t *testing.T) {
	path := closedJournal(t, "run-ahead", 10)
	older, err := os.ReadFile(path)
	require.NoError(t, err)
	j, err := journalfile.Open(path)
	require.NoError(t, err)
	writeSample(t, j, 5)
	want := rowsJSON(t, j)
	journalfile.Abandon(j)
	require.NoError(t, os.WriteFile(path, older, 0o600))
	// A read of the file as it is (10 rows: its log, opened in this boot, says it is not torn)
	// is made again once the file has the log's rows.
	var read []uint64
	j, err = journalfile.OpenReading(path, func(ro *journalfile.Journal) error {
		read = read[:0]
		return ro.Each(1, 0, func(r *journal.Row) error {
			read = append(read, r.Seq)
			return nil
		})
	})
	require.NoError(t, err)
	require.NoError(t, j.Close())
	require.Len(t, read, 15, "the read that counts is of the file with the log's rows")
	assert.Equal(t, uint64(15), read[14])
	got, sum := reopened(t, path)
	assert.Equal(t, want, got)
	assert.Equal(t, uint64(15), sum.LastSeq)
}

// A journal whose log a newer crw wrote (another log format: its rows may be of a format this
// crw does not read) is refused before its file is made again from the log after a restart,
// and nothing of it is changed.
func TestALogOfANewerCrwIsRefusedBeforeARebuild(t *testing.T) {
	playBoot(t, "boot-1")
	path, _ := loggedJournal(t, 6)
	log := mustRead(t, path+"-log")
	copy(log, "crw-log2")
	require.NoError(t, os.WriteFile(path+"-log", log, 0o600))
	before, beforeLog := mustRead(t, path), mustRead(t, path+"-log")
	playBoot(t, "boot-2") // the file may be torn: an open would make it again from the log
	_, err := journalfile.OpenReading(path, func(*journalfile.Journal) error {
		t.Error("read was given the journal")
		return nil
	})
	require.ErrorIs(t, err, journalfile.ErrSchema)
	assert.ErrorContains(t, err, `it opens with "crw-log2"`)
	assert.Equal(t, before, mustRead(t, path), "the file is as it was")
	assert.Equal(t, beforeLog, mustRead(t, path+"-log"), "the log is as it was")
	_, err = os.Stat(path + ".torn")
	assert.ErrorIs(t, err, fs.ErrNotExist, "nothing was rebuilt")
}

func TestAJournalWithoutItsLogIsRefused(t *testing.T) {
	path, _ := loggedJournal(t, 5)
	require.NoError(t, os.Remove(path+"-log"))
	_, err := journalfile.Open(path)
	require.ErrorIs(t, err, journalfile.ErrCorrupt)
	assert.Contains(t, err.Error(), "its log")
	// Readers read the file alone.
	j, err := journalfile.OpenReadOnly(path)
	require.NoError(t, err)
	require.NoError(t, j.Close())
}

func TestAnotherRunsLogIsRefused(t *testing.T) {
	path, _ := loggedJournal(t, 5)
	other, _ := loggedJournalOf(t, "run-other", 5)
	data, err := os.ReadFile(other + "-log")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path+"-log", data, 0o600))
	_, err = journalfile.Open(path)
	require.ErrorIs(t, err, journalfile.ErrCorrupt)
}

// A journal written before logs were kept (format "2") is read and written as it was: its
// commits fsync the file, and it gets no log.
func TestAJournalOfTheFormerFormatKeepsNoLog(t *testing.T) {
	path, want := loggedJournal(t, 8)
	require.NoError(t, os.Remove(path+"-log"))
	editFile(t, path, func(tx *bbolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte("2")) })
	j, err := journalfile.Open(path)
	require.NoError(t, err)
	_, err = j.Write(&journal.Row{Type: journal.TypeWarning, Reason: "later"})
	require.NoError(t, err)
	require.NoError(t, j.Close())
	_, err = os.Stat(path + "-log")
	assert.ErrorIs(t, err, os.ErrNotExist)
	got, _ := reopened(t, path)
	assert.Equal(t, want, got[:8])
	assert.Len(t, got, 9)
}

// A format this crw does not know is ErrSchema: a newer crw wrote it.
func TestAnUnknownFormatIsRefused(t *testing.T) {
	path, _ := loggedJournal(t, 3)
	editFile(t, path, func(tx *bbolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte("4")) })
	_, err := journalfile.Open(path)
	require.ErrorIs(t, err, journalfile.ErrSchema)
	_, err = journalfile.OpenReader(path)
	require.ErrorIs(t, err, journalfile.ErrSchema)
}

func editFile(t *testing.T, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(fn))
	require.NoError(t, db.Close())
}

// cutLogAfter cuts the journal's log after the frame that holds row seq.
func cutLogAfter(t *testing.T, path string, seq uint64) {
	t.Helper()
	data, err := os.ReadFile(path + "-log")
	require.NoError(t, err)
	// Frame by frame (its length, its checksum, its payload) until a prefix ends at row seq.
	for end := 8; end+8 <= len(data); {
		end += 8 + int(binary.LittleEndian.Uint32(data[end:]))
		require.NoError(t, os.WriteFile(path+"-cut", data[:end], 0o600))
		l, st, err := rowlog.Open(path+"-cut", nil)
		require.NoError(t, err)
		require.NoError(t, l.Close())
		if st.Last == seq {
			require.NoError(t, os.Rename(path+"-cut", path+"-log"))
			return
		}
	}
	t.Fatalf("no frame ends at row %d", seq)
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

// tearTo is what a power loss leaves of a file whose last writes were not fsync'd: the meta
// pages (0 and 1) of post reached the disk, every other page is still what pre held (zeros
// where the file grew).
func tearTo(pre, post []byte) []byte {
	torn := append([]byte(nil), post...)
	for i := 2 * 4096; i < len(torn); i++ {
		torn[i] = 0
		if i < len(pre) {
			torn[i] = pre[i]
		}
	}
	return torn
}

// The machine loses power in the first commit after an open: the file's commit was not fsync'd
// and the log's append never reached the disk, so the log ends with the open's checkpoint and
// boot frame. The file is not trusted for that checkpoint: it is made again from the log.
func TestAPowerLossInTheFirstCommitAfterAnOpen(t *testing.T) {
	playBoot(t, "boot-1")
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := journalfile.Create(path, "run-first")
	require.NoError(t, err)
	writeSample(t, j, 10)
	want := rowsJSON(t, j)
	require.NoError(t, j.Close())

	j, err = journalfile.Open(path)
	require.NoError(t, err)
	preFile, preLog := mustRead(t, path), mustRead(t, path+"-log")
	_, err = j.Write(&journal.Row{Type: journal.TypeWarning, Reason: "in flight"})
	require.NoError(t, err)
	journalfile.Abandon(j)
	require.NoError(t, os.WriteFile(path, tearTo(preFile, mustRead(t, path)), 0o600))
	require.NoError(t, os.WriteFile(path+"-log", preLog, 0o600))

	playBoot(t, "boot-2")
	got, sum := reopened(t, path)
	assert.Equal(t, want, got)
	assert.Equal(t, uint64(10), sum.LastSeq)
	_, err = os.Stat(path + ".torn")
	assert.NoError(t, err, "the file replaced is kept")
}

// The log of another run is refused before anything is made of it; a file made again from its
// log is kept as it was beside it, for whoever looks into why.
func TestARebuildIsTheRunsAndKeepsTheFileItReplaces(t *testing.T) {
	playBoot(t, "boot-1")
	path, want := loggedJournal(t, 5)
	other, _ := loggedJournalOf(t, "run-other", 3)
	mine := mustRead(t, path+"-log")
	require.NoError(t, os.WriteFile(path+"-log", mustRead(t, other+"-log"), 0o600))
	before := mustRead(t, path)
	playBoot(t, "boot-2")
	_, err := journalfile.OpenRun(path, "run-logged", nil)
	require.ErrorIs(t, err, journalfile.ErrCorrupt)
	assert.Contains(t, err.Error(), "its log is run run-other's")
	assert.Equal(t, before, mustRead(t, path), "the file is left as it is")

	require.NoError(t, os.WriteFile(path+"-log", mine, 0o600))
	j, err := journalfile.OpenRun(path, "run-logged", nil)
	require.NoError(t, err)
	assert.Equal(t, want, rowsJSON(t, j))
	require.NoError(t, j.Close())
	assert.Equal(t, before, mustRead(t, path+".torn"), "the file replaced")
}

// A rebuild killed or failing at any step is made again at the next open, from the same log:
// the file kept as .torn is the torn original, never a file a rebuild made, whether the first
// rebuild's file is already in place or not, the second fails too, or the run's folder was
// copied in between (hard links not kept). A later restart's torn file replaces it.
func TestARebuildStoppedAnywhereKeepsTheTornOriginal(t *testing.T) {
	for _, tt := range []struct {
		name   string
		first  string // where the first rebuild is killed
		second string // where the second is ("": it goes through)
		copied bool   // the run's folder is copied, without its hard links, after the first
	}{
		{name: "killed after the rename", first: "renamed"},
		{name: "killed before the rename", first: "kept"},
		{name: "killed after the rename, then before it", first: "renamed", second: "kept"},
		{name: "killed after the rename twice", first: "renamed", second: "renamed"},
		{name: "killed after the rename, folder copied", first: "renamed", copied: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			playBoot(t, "boot-1")
			path, want := loggedJournal(t, 5)
			torn := mustRead(t, path)
			torn[len(torn)-1] ^= 0xff // what the restart left differs from any file made from the log
			require.NoError(t, os.WriteFile(path, torn, 0o600))
			playBoot(t, "boot-2")

			for _, step := range []string{tt.first, tt.second} {
				if step == "" {
					continue
				}
				journalfile.FailNextRebuild(path, step)
				_, err := journalfile.OpenRun(path, "run-logged", nil)
				require.ErrorContains(t, err, "stopped at its step")
				assert.Equal(t, torn, mustRead(t, path+".torn"), "killed at %s", step)
			}
			if tt.copied {
				dir := filepath.Dir(path)
				entries, err := os.ReadDir(dir)
				require.NoError(t, err)
				for _, e := range entries {
					if !e.Type().IsRegular() {
						continue
					}
					name := filepath.Join(dir, e.Name())
					data := mustRead(t, name)
					require.NoError(t, os.Remove(name))
					require.NoError(t, os.WriteFile(name, data, 0o600))
				}
			}
			j, err := journalfile.OpenRun(path, "run-logged", nil)
			require.NoError(t, err)
			assert.Equal(t, want, rowsJSON(t, j))
			assert.Equal(t, torn, mustRead(t, path+".torn"), "the rebuild that went through kept it too")

			// A later restart that tears the file again keeps that one.
			journalfile.Abandon(j)
			again := mustRead(t, path)
			again[len(again)-1] ^= 0x0f
			require.NoError(t, os.WriteFile(path, again, 0o600))
			playBoot(t, "boot-3")
			j, err = journalfile.OpenRun(path, "run-logged", nil)
			require.NoError(t, err)
			assert.Equal(t, want, rowsJSON(t, j))
			require.NoError(t, j.Close())
			assert.Equal(t, again, mustRead(t, path+".torn"), "a new torn original replaces the old")
		})
	}
}

// What is planted beside a journal is never written through nor waited on, and what is in a
// rebuild's way is damage the writer's open says, not an error no command gets past: a symlink,
// a hard link or a FIFO where the boot file or the torn file's record goes is replaced; a directory where
// the file itself is, or that holds something where the boot file or the rebuild's file goes,
// is ErrCorrupt.
func TestWhatIsPlantedBesideAJournal(t *testing.T) {
	outside := func(t *testing.T) string {
		p := filepath.Join(t.TempDir(), "outside")
		require.NoError(t, os.WriteFile(p, []byte("do not touch\n"), 0o600))
		return p
	}
	fullDir := func(t *testing.T, p string) {
		require.NoError(t, os.Mkdir(p, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(p, "x"), []byte("x"), 0o600))
	}
	for _, tt := range []struct {
		name    string
		restart bool // the machine restarts after the plant: the open rebuilds
		plant   func(t *testing.T, path string) (check func(t *testing.T))
		corrupt bool // the open is ErrCorrupt; else it goes through
	}{
		{name: "symlink at the boot file", plant: func(t *testing.T, path string) func(*testing.T) {
			o := outside(t)
			require.NoError(t, os.Remove(path+"-log.boot"))
			require.NoError(t, os.Symlink(o, path+"-log.boot"))
			return func(t *testing.T) { assert.Equal(t, "do not touch\n", string(mustRead(t, o))) }
		}},
		{name: "hard link at the boot file", plant: func(t *testing.T, path string) func(*testing.T) {
			o := outside(t)
			require.NoError(t, os.Remove(path+"-log.boot"))
			require.NoError(t, os.Link(o, path+"-log.boot"))
			return func(t *testing.T) { assert.Equal(t, "do not touch\n", string(mustRead(t, o))) }
		}},
		{name: "symlink from the boot file to the journal", plant: func(t *testing.T, path string) func(*testing.T) {
			require.NoError(t, os.Remove(path+"-log.boot"))
			require.NoError(t, os.Symlink(path, path+"-log.boot"))
			return func(t *testing.T) {}
		}},
		{name: "FIFO at the boot file", plant: func(t *testing.T, path string) func(*testing.T) {
			require.NoError(t, os.Remove(path+"-log.boot"))
			require.NoError(t, syscall.Mkfifo(path+"-log.boot", 0o600))
			return func(t *testing.T) {}
		}},
		{name: "directory holding a file at the boot file", corrupt: true, plant: func(t *testing.T, path string) func(*testing.T) {
			require.NoError(t, os.Remove(path+"-log.boot"))
			fullDir(t, path+"-log.boot")
			return func(t *testing.T) {}
		}},
		{name: "symlink at the torn file's record", restart: true, plant: func(t *testing.T, path string) func(*testing.T) {
			o := outside(t)
			require.NoError(t, os.Symlink(o, path+".torn.from"))
			return func(t *testing.T) {
				assert.Equal(t, "do not touch\n", string(mustRead(t, o)))
				_, err := os.Stat(path + ".torn")
				assert.NoError(t, err, "the torn file is kept")
			}
		}},
		{name: "directory holding a file at the rebuild's file", restart: true, corrupt: true, plant: func(t *testing.T, path string) func(*testing.T) {
			fullDir(t, path+".rebuilt")
			return func(t *testing.T) {}
		}},
		{name: "directory in the journal's place", restart: true, corrupt: true, plant: func(t *testing.T, path string) func(*testing.T) {
			require.NoError(t, os.Remove(path))
			fullDir(t, path)
			return func(t *testing.T) {}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			playBoot(t, "boot-1")
			path, want := loggedJournal(t, 5)
			if tt.restart {
				j, err := journalfile.OpenRun(path, "run-logged", nil)
				require.NoError(t, err)
				journalfile.Abandon(j)
			}
			check := tt.plant(t, path)
			if tt.restart {
				playBoot(t, "boot-2")
			}
			j, err := journalfile.OpenRun(path, "run-logged", nil)
			if tt.corrupt {
				require.ErrorIs(t, err, journalfile.ErrCorrupt)
				t.Log(err)
				check(t)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want, rowsJSON(t, j))
			_, err = j.Write(&journal.Row{Type: journal.TypeWarning, Reason: "after"})
			require.NoError(t, err)
			require.NoError(t, j.Close())
			check(t)
			info, err := os.Lstat(path + "-log.boot")
			require.NoError(t, err)
			assert.True(t, info.Mode().IsRegular(), "the boot file is a file of crw's own again")
		})
	}
}

// A reader does not trust a file the machine's restart may have torn: its log was not closed
// and its last writer opened it in another boot. It says so until a writer's open recovers it;
// a log closed, or a writer of this boot, is read as it is.
func TestReadersWaitForTheRecovery(t *testing.T) {
	readers := map[string]func(path string) error{
		"ReadSummary": func(path string) error { _, _, err := journalfile.ReadSummary(path); return err },
		"ReadOutstanding": func(path string) error {
			_, _, err := journalfile.ReadOutstanding(path, 10)
			return err
		},
		"OpenReader": func(path string) error {
			j, err := journalfile.OpenReader(path)
			if err == nil {
				_ = j.Close()
			}
			return err
		},
		"OpenReadOnly": func(path string) error {
			j, err := journalfile.OpenReadOnly(path)
			if err == nil {
				_ = j.Close()
			}
			return err
		},
	}
	playBoot(t, "boot-1")
	killed, _ := loggedJournal(t, 12)
	closed, _ := loggedJournalOf(t, "run-closed", 12)
	_, _ = reopened(t, closed)
	for name, read := range readers {
		require.NoError(t, read(killed), "%s: the writer died, the machine did not", name)
	}
	playBoot(t, "boot-2")
	for name, read := range readers {
		err := read(killed)
		require.ErrorIs(t, err, journalfile.ErrUnrecovered, name)
		require.NoError(t, read(closed), "%s: a log its writer closed", name)
	}
	rows, _ := reopened(t, killed)
	require.Len(t, rows, 12)
	for name, read := range readers {
		require.NoError(t, read(killed), "%s: once a writer recovered it", name)
	}
}

// A reader of a journal whose writer died reads the last writer's boot in the log's boot
// file, not in every frame of the log (~100 MB for 100,000 calls): a log damaged in its
// middle is left to the next open to write. Without the boot file, the log is read.
func TestReadersTakeTheBootFromTheBootFile(t *testing.T) {
	playBoot(t, "boot-1")
	path, _ := loggedJournal(t, 20)
	logPath := rowlog.Path(path)
	data, err := os.ReadFile(logPath)
	require.NoError(t, err)
	data[len(data)/2] ^= 0xff
	require.NoError(t, os.WriteFile(logPath, data, 0o600))
	_, _, err = journalfile.ReadSummary(path)
	require.NoError(t, err, "the writer died, the machine did not: the file is read")
	require.NoError(t, os.Remove(rowlog.BootFile(logPath)))
	_, _, err = journalfile.ReadSummary(path)
	require.ErrorIs(t, err, journalfile.ErrCorrupt, "without the boot file the log is read, and found damaged")

	path, _ = loggedJournal(t, 20)
	require.NoError(t, os.Remove(rowlog.BootFile(rowlog.Path(path))))
	_, _, err = journalfile.ReadSummary(path)
	require.NoError(t, err)
	playBoot(t, "boot-2")
	_, _, err = journalfile.ReadSummary(path)
	require.ErrorIs(t, err, journalfile.ErrUnrecovered, "the log's last boot frame says another boot")
}

// A file a machine's restart cut to nothing is torn, not damaged: readers wait for the
// recovery that makes it again, which loses nothing.
func TestAFileCutToNothingWaitsForItsRecovery(t *testing.T) {
	playBoot(t, "boot-1")
	path, want := loggedJournal(t, 9)
	require.NoError(t, os.Truncate(path, 0))
	playBoot(t, "boot-2")
	_, _, err := journalfile.ReadSummary(path)
	require.ErrorIs(t, err, journalfile.ErrUnrecovered)
	_, _, err = journalfile.ReadOutstanding(path, 10)
	require.ErrorIs(t, err, journalfile.ErrUnrecovered)
	_, err = journalfile.OpenReader(path)
	require.ErrorIs(t, err, journalfile.ErrUnrecovered)
	got, sum := reopened(t, path)
	assert.Equal(t, want, got)
	assert.Equal(t, uint64(9), sum.LastSeq)
}

// An open to write that makes the file again from the log and then goes no further (its
// reading refuses the journal: a resume of a run that has ended) leaves a journal readers
// read: the recovery is not lost with the open, nor asked for again of a command that will not
// make it.
func TestARecoveryStandsWhenItsOpenGoesNoFurther(t *testing.T) {
	playBoot(t, "boot-1")
	path, want := loggedJournal(t, 12)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for i := 4 * 4096; i < len(data); i++ {
		data[i] = 0 // torn by the restart
	}
	require.NoError(t, os.WriteFile(path, data, 0o600))
	playBoot(t, "boot-2")
	refused := errors.New("the run has ended: nothing to resume")
	_, err = journalfile.OpenReading(path, func(*journalfile.Journal) error { return refused })
	require.ErrorIs(t, err, refused)
	r, err := journalfile.OpenReader(path)
	require.NoError(t, err, "the file made again is read, not waited for")
	got := rowsJSON(t, r)
	require.NoError(t, r.Close())
	assert.Equal(t, want, got)
	_, _, err = journalfile.ReadSummary(path)
	require.NoError(t, err)
	playBoot(t, "boot-3")
	_, _, err = journalfile.ReadSummary(path)
	require.NoError(t, err, "the file made again was fsync'd: a later restart leaves it as it is")
	rows, _ := reopened(t, path)
	assert.Equal(t, want, rows)
}

// A file that does not read is torn by the restart when its log's last writer opened it in
// another boot, and damaged when in this one.
func TestAFileThatDoesNotReadIsTornOrDamagedByItsLogsBoot(t *testing.T) {
	playBoot(t, "boot-1")
	path, _ := loggedJournal(t, 12)
	data := mustRead(t, path)
	require.NoError(t, os.WriteFile(path, data[:8192], 0o600))
	_, _, err := journalfile.ReadSummary(path)
	require.ErrorIs(t, err, journalfile.ErrCorrupt)
	require.NotErrorIs(t, err, journalfile.ErrUnrecovered)
	playBoot(t, "boot-2")
	_, _, err = journalfile.ReadSummary(path)
	require.ErrorIs(t, err, journalfile.ErrUnrecovered)
	rows, _ := reopened(t, path)
	assert.Len(t, rows, 12, "made again from its log")
}

// A row longer than the log's frames is refused at its append, before the file takes it: the
// journal is poisoned, and its next open finds the file and the log as they were.
func TestARowLongerThanTheLogTakesIsRefusedBeforeTheFile(t *testing.T) {
	defer rowlog.SetMaxFrame(4096)()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := journalfile.Create(path, "run-long")
	require.NoError(t, err)
	writeSample(t, j, 3)
	want := rowsJSON(t, j)
	_, err = j.Write(&journal.Row{Type: journal.TypeWarning, Reason: strings.Repeat("x", 5000)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than a journal's row may")
	_ = j.Close()
	got, sum := reopened(t, path)
	assert.Equal(t, want, got)
	assert.Equal(t, uint64(3), sum.LastSeq)
}

// A commit of more rows than one transaction of a rebuild takes (applyBatch) is made again
// whole, in several.
func TestARebuildOfACommitOfManyRows(t *testing.T) {
	playBoot(t, "boot-1")
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := journalfile.Create(path, "run-many")
	require.NoError(t, err)
	_, err = j.Write(journalfiletest.SampleRows(10000)...)
	require.NoError(t, err)
	want := rowsJSON(t, j)
	journalfile.Abandon(j)
	require.NoError(t, os.WriteFile(path, mustRead(t, path)[:8192], 0o600))
	playBoot(t, "boot-2")
	got, sum := reopened(t, path)
	assert.Equal(t, want, got)
	assert.Equal(t, uint64(10000), sum.LastSeq)
}

// A file torn so that its root page is a branch that points to itself would send bbolt round
// it until its stack ran out: after a restart, neither a reader nor the writer's open reads it
// before it is made again from its log.
func TestACyclicTornFileIsNotRead(t *testing.T) {
	playBoot(t, "boot-1")
	path, want := loggedJournal(t, 5)
	data := mustRead(t, path)
	const page = 4096
	meta := 0
	if binary.LittleEndian.Uint64(data[page+16+48:]) > binary.LittleEndian.Uint64(data[16+48:]) {
		meta = page // the meta of the higher txid
	}
	root := binary.LittleEndian.Uint64(data[meta+16+16:])
	p := data[int(root)*page : int(root+1)*page]
	clear(p)
	binary.LittleEndian.PutUint64(p[0:], root)
	binary.LittleEndian.PutUint16(p[8:], 0x01) // a branch page
	binary.LittleEndian.PutUint16(p[10:], 1)   // of one element
	binary.LittleEndian.PutUint32(p[16:], 16)  // its key 16 bytes on
	binary.LittleEndian.PutUint32(p[20:], 4)
	binary.LittleEndian.PutUint64(p[24:], root) // pointing to itself
	copy(p[32:], "meta")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	playBoot(t, "boot-2")
	_, _, err := journalfile.ReadSummary(path)
	require.ErrorIs(t, err, journalfile.ErrUnrecovered)
	_, err = journalfile.OpenReader(path)
	require.ErrorIs(t, err, journalfile.ErrUnrecovered)
	// An open that reads (a resume) does not read the torn file beside its recovery: it reads
	// the file made again.
	assert.Equal(t, len(want), rowsReadOpening(t, path))
	got, _ := reopened(t, path)
	assert.Equal(t, want, got)
}
