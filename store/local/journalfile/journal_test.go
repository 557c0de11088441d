package journalfile_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local/journalfile"
	"github.com/crw-dev/crw/store/local/journalfile/journalfiletest"
)

func deref(rows []*journal.Row) []journal.Row {
	out := make([]journal.Row, len(rows))
	for i, r := range rows {
		out[i] = *r
	}
	return out
}

func TestCreateOpenRoundTrip(t *testing.T) {
	t.Parallel()
	j, path := journalfiletest.Create(t)
	assert.Equal(t, journalfiletest.RunID, j.RunID())
	assert.Equal(t, uint64(0), j.LastSeq())

	first := journalfiletest.SampleRows(5)
	first[0].At = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	seq, err := j.Write(first...)
	require.NoError(t, err)
	require.Equal(t, uint64(5), seq)
	for i, r := range first {
		assert.Equal(t, uint64(i+1), r.Seq, "Append sets Seq on the caller's row")
		assert.False(t, r.At.IsZero(), "Append fills At")
	}
	assert.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), first[0].At, "a set At is kept")
	require.NoError(t, j.Close())

	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), info.Mode().Perm())

	j = journalfiletest.Reopen(t, path)
	assert.Equal(t, journalfiletest.RunID, j.RunID())
	assert.Equal(t, uint64(5), j.LastSeq())
	assert.Equal(t, uint64(5), j.DurableSeq())
	rows, err := j.Rows()
	require.NoError(t, err)
	assert.Equal(t, deref(first), rows)

	// A resumed run continues the seqs.
	more := journalfiletest.SampleRows(3)
	seq, err = j.Write(more...)
	require.NoError(t, err)
	assert.Equal(t, uint64(8), seq)
	require.NoError(t, j.Close())

	ro, err := journalfile.OpenReadOnly(path)
	require.NoError(t, err)
	defer ro.Close()
	rows, err = ro.Rows()
	require.NoError(t, err)
	assert.Equal(t, append(deref(first), deref(more)...), rows)
	assert.Equal(t, uint64(8), ro.LastSeq())
}

func TestCreateErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.db")
	require.NoError(t, os.WriteFile(existing, []byte("keep me"), 0o600))

	tests := []struct {
		name   string
		path   string
		run    string
		target error  // errors.Is target, if any
		text   string // substring of the message
	}{
		{name: "exists", path: existing, run: "r", target: journalfile.ErrExists},
		{name: "no parent dir", path: filepath.Join(dir, "missing", "journal.db"), run: "r", target: fs.ErrNotExist},
		{name: "empty run id", path: filepath.Join(dir, "norun.db"), run: "", text: "empty run id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := journalfile.Create(tt.path, tt.run)
			require.Error(t, err)
			if tt.target != nil {
				assert.ErrorIs(t, err, tt.target)
			}
			assert.ErrorContains(t, err, tt.text)
		})
	}
	got, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "keep me", string(got), "Create must not touch an existing file")
	assert.NoFileExists(t, filepath.Join(dir, "norun.db"))
}

func TestOpenMissing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.db")
	for name, open := range map[string]func(string) (*journalfile.Journal, error){"Open": journalfile.Open, "OpenReadOnly": journalfile.OpenReadOnly, "OpenReader": journalfile.OpenReader} {
		_, err := open(path)
		assert.ErrorIs(t, err, fs.ErrNotExist, name)
		assert.NoFileExists(t, path, "%s must not create a journal", name)
	}
}

// editBolt changes a closed journal with bbolt directly, as another program might.
func editBolt(t *testing.T, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	require.NoError(t, db.Update(fn))
	require.NoError(t, db.Close())
}

// goodJournal writes a closed journal of n rows and returns its path.
func goodJournal(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := journalfile.Create(path, "run-good")
	require.NoError(t, err)
	for _, r := range journalfiletest.SampleRows(n) {
		_, err := j.Write(r)
		require.NoError(t, err)
	}
	require.NoError(t, j.Close())
	return path
}

// copyJournal copies the journal at src, its file and its log, to dst.
func copyJournal(t *testing.T, src, dst string) {
	t.Helper()
	for _, suffix := range []string{"", "-log"} {
		data, err := os.ReadFile(src + suffix)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst+suffix, data, 0o600))
	}
}

func digest(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return sha256.Sum256(b)
}

func TestOpenSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(tx *bbolt.Tx) error
	}{
		{name: "newer schema", edit: func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte("crw-journal/2"))
		}},
		{name: "no schema", edit: func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("meta")).Delete([]byte("schema"))
		}},
		{name: "not a journal", edit: func(tx *bbolt.Tx) error {
			return tx.DeleteBucket([]byte("meta"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := goodJournal(t, 3)
			editBolt(t, path, tt.edit)
			before := digest(t, path)
			_, err := journalfile.Open(path)
			assert.ErrorIs(t, err, journalfile.ErrSchema)
			_, err = journalfile.OpenReadOnly(path)
			assert.ErrorIs(t, err, journalfile.ErrSchema)
			_, err = journalfile.OpenReader(path)
			assert.ErrorIs(t, err, journalfile.ErrSchema)
			assert.Equal(t, before, digest(t, path), "file changed")
		})
	}
}

// pageFacts reads a good journal's page size, high-water mark and the root
// page of its rows bucket.
func pageFacts(t *testing.T, path string) (pageSize int, hwm int64, rowsRoot uint64, rootType string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: time.Second})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		hwm = tx.Size()
		rowsRoot = uint64(tx.Bucket([]byte("rows")).RootPage())
		info, err := tx.Page(int(rowsRoot))
		if info != nil {
			rootType = info.Type
		}
		return err
	}))
	return db.Info().PageSize, hwm, rowsRoot, rootType
}

func TestOpenCorrupt(t *testing.T) {
	t.Parallel()
	good := goodJournal(t, 400)
	goodBytes, err := os.ReadFile(good)
	require.NoError(t, err)
	pageSize, hwm, rowsRoot, rootType := pageFacts(t, good)
	require.Equal(t, "branch", rootType, "the cases below need a rows bucket of several pages")
	rootOff := int(rowsRoot) * pageSize
	// A writer's close writes the list of free pages: its page (header 16 bytes: id, flags,
	// count, overflow; then the free page ids) is damage a hostile file can carry too.
	freeOff := freelistPage(t, good) * pageSize
	require.Positive(t, binary.LittleEndian.Uint16(goodBytes[freeOff+10:]), "the cases below need a free page listed")
	pgid := func(id uint64) []byte { return binary.LittleEndian.AppendUint64(nil, id) }

	garbage := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	withBytes := func(off int, b []byte) []byte {
		out := append([]byte(nil), goodBytes...)
		copy(out[off:], b)
		return out
	}

	tests := []struct {
		name  string
		bytes []byte                // the file's content, or
		edit  func(*bbolt.Tx) error // an edit of the good file through bbolt
		// rowsIntact: the damage is in the list of free pages, which a reader never reads:
		// its rows read, where an open to write (or its check) refuses the file.
		rowsIntact bool
	}{
		{name: "zero length", bytes: []byte{}},
		{name: "one byte", bytes: []byte{0}},
		{name: "text file", bytes: []byte(strings.Repeat("this is not a database\n", 1000))},
		{name: "garbage", bytes: garbage},
		{name: "truncated to 100 bytes", bytes: goodBytes[:100]},
		{name: "truncated to one page", bytes: goodBytes[:pageSize]},
		{name: "truncated inside meta pages", bytes: goodBytes[:2*pageSize-1]},
		{name: "truncated to half", bytes: goodBytes[:hwm/2]},
		{name: "truncated one page short", bytes: goodBytes[:hwm-int64(pageSize)]},
		{name: "meta pages zeroed", bytes: withBytes(0, make([]byte, 2*pageSize))},
		{name: "first meta page garbled", bytes: withBytes(0, garbage[:64])},
		{name: "rows root page id garbled", bytes: withBytes(rootOff, []byte{0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef})},
		{name: "rows root page type garbled", bytes: withBytes(rootOff+8, []byte{0xff, 0xff})},
		// The first branch element's child pgid (page header 16 bytes, then
		// pos, ksize, pgid) pointed far past the map: reading it faults.
		{name: "branch points outside the file", bytes: withBytes(rootOff+16+8, []byte{0, 0, 0, 0x40, 0, 0, 0, 0})},
		{name: "branch points at a meta page", bytes: withBytes(rootOff+16+8, []byte{1, 0, 0, 0, 0, 0, 0, 0})},
		{name: "free list names the rows root", bytes: withBytes(freeOff+16, pgid(rowsRoot)), rowsIntact: true},
		{name: "free list names a meta page", bytes: withBytes(freeOff+16, pgid(1)), rowsIntact: true},
		{name: "free list names a page past the file", bytes: withBytes(freeOff+16, pgid(uint64(hwm))), rowsIntact: true},
		{name: "free list count past its page", bytes: withBytes(freeOff+10, []byte{0xfe, 0xff}), rowsIntact: true},
		{name: "free list huge count", bytes: withBytes(freeOff+10, append([]byte{0xff, 0xff, 0, 0, 0, 0}, pgid(1<<60)...)), rowsIntact: true},
		{name: "free list page type garbled", bytes: withBytes(freeOff+8, []byte{0x02, 0x00}), rowsIntact: true},
		{name: "row value not JSON", edit: func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("rows")).Put([]byte{0, 0, 0, 0, 0, 0, 0, 9}, []byte(`{"seq":9,"ty`))
		}},
		{name: "gap in seqs", edit: func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("rows")).Delete([]byte{0, 0, 0, 0, 0, 0, 0, 7})
		}},
		{name: "bad seq key", edit: func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("rows")).Put([]byte("x"), []byte("{}"))
		}},
		{name: "no rows bucket", edit: func(tx *bbolt.Tx) error { return tx.DeleteBucket([]byte("rows")) }},
		{name: "no run id", edit: func(tx *bbolt.Tx) error { return tx.Bucket([]byte("meta")).Delete([]byte("run")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "journal.db")
			if tt.edit != nil {
				require.NoError(t, os.WriteFile(path, goodBytes, 0o600))
				editBolt(t, path, tt.edit)
			} else {
				require.NoError(t, os.WriteFile(path, tt.bytes, 0o600))
			}
			before := digest(t, path)

			j, err := journalfile.Open(path)
			if j != nil {
				_ = j.Close()
			}
			require.ErrorIs(t, err, journalfile.ErrCorrupt)
			t.Log(err)
			assert.Contains(t, err.Error(), path)
			assert.Equal(t, before, digest(t, path), "Open changed a damaged file")

			// A resume's open reads the file beside its check (OpenRun): the check's error, the
			// read's outcome whatever it was.
			j, err = journalfile.OpenReading(path, func(ro *journalfile.Journal) error {
				return ro.Each(1, 0, func(*journal.Row) error { return nil })
			})
			if j != nil {
				_ = j.Close()
			}
			require.ErrorIs(t, err, journalfile.ErrCorrupt)
			assert.Equal(t, before, digest(t, path), "OpenReading changed a damaged file")

			j, err = journalfile.OpenReadOnly(path)
			if j != nil {
				_ = j.Close()
			}
			require.ErrorIs(t, err, journalfile.ErrCorrupt)
			assert.Equal(t, before, digest(t, path), "OpenReadOnly changed a damaged file")

			// A reader checks what it reads: the damage shows at the open or when the rows
			// are read, as an error, never a crash.
			j, err = journalfile.OpenReader(path)
			if err == nil {
				err = j.Each(1, 0, func(*journal.Row) error { return nil })
				_ = j.Close()
			}
			if tt.rowsIntact {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, journalfile.ErrCorrupt)
			}
			assert.Equal(t, before, digest(t, path), "OpenReader changed a damaged file")
		})
	}
}

// A journal whose last commit wrote no list of the file's free pages (a crw before lists were
// written, its writer killed) has bbolt walk its pages for the free ones on a goroutine of its
// own, which a bad page crashes. Damaged in its rows, it is ErrCorrupt to every open, a resume's
// too (which reads it beside its check only once the check's walk found its pages sound), and
// never a crash.
func TestACorruptJournalWithoutAListOfFreePages(t *testing.T) {
	t.Parallel()
	good := goodJournal(t, 400)
	db, err := bbolt.Open(good, 0o600, &bbolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error { // a commit that writes no list
		meta := tx.Bucket([]byte("meta"))
		return meta.Put([]byte("schema"), append([]byte(nil), meta.Get([]byte("schema"))...))
	}))
	require.NoError(t, db.Close())
	goodBytes := mustRead(t, good)
	pageSize, _, rowsRoot, rootType := pageFacts(t, good)
	require.Equal(t, "branch", rootType)
	rootOff := int(rowsRoot) * pageSize
	for name, child := range map[string]uint64{"outside the file": 0x40000000, "at a meta page": 1} {
		t.Run("branch points "+name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "journal.db")
			data := append([]byte(nil), goodBytes...)
			binary.LittleEndian.PutUint64(data[rootOff+16+8:], child)
			require.NoError(t, os.WriteFile(path, data, 0o600))
			before := digest(t, path)
			_, err := journalfile.Open(path)
			require.ErrorIs(t, err, journalfile.ErrCorrupt)
			_, err = journalfile.OpenReading(path, func(ro *journalfile.Journal) error {
				return ro.Each(1, 0, func(*journal.Row) error { return nil })
			})
			require.ErrorIs(t, err, journalfile.ErrCorrupt)
			assert.Equal(t, before, digest(t, path))
		})
	}
	// Undamaged, it is resumed.
	assert.Equal(t, 400, rowsReadOpening(t, good))
}

// rowsReadOpening opens the journal at path to write with a read (OpenReading) that counts its
// rows, closes it, and gives the count of the read that counted (the last one).
func rowsReadOpening(t *testing.T, path string) int {
	t.Helper()
	var read int
	j, err := journalfile.OpenReading(path, func(ro *journalfile.Journal) error {
		read = 0
		return ro.Each(1, 0, func(*journal.Row) error {
			read++
			return nil
		})
	})
	require.NoError(t, err)
	require.NoError(t, j.Close())
	return read
}

// A directory where the journal's file should be is damage to every opener, the writer too: it
// is left as it is, and the run's commands say the journal is damaged rather than that it could
// not be opened.
func TestADirectoryInTheJournalsPlaceIsDamage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.db")
	require.NoError(t, os.Mkdir(path, 0o700))
	for name, open := range map[string]func(string) (*journalfile.Journal, error){
		"Open": journalfile.Open, "OpenReadOnly": journalfile.OpenReadOnly, "OpenReader": journalfile.OpenReader,
	} {
		j, err := open(path)
		if j != nil {
			_ = j.Close()
		}
		require.ErrorIs(t, err, journalfile.ErrCorrupt, name)
		assert.Equal(t, "empty or not a regular file", journalfile.Damage(err), name)
		info, statErr := os.Stat(path)
		require.NoError(t, statErr, name)
		assert.True(t, info.IsDir(), "%s changed what was at the journal's path", name)
	}
}

// A row whose checksum holds is taken at open as the JSON its writer encoded (the open does not
// parse every row again); if it is not JSON after all, reading it says so and names it.
func TestARowNotJSONUnderItsChecksum(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.db")
	copyJournal(t, goodJournal(t, 40), path)
	require.NoError(t, journalfile.PutSealed(path, 9, []byte(`{"seq":9,"ty`)))

	j, err := journalfile.Open(path)
	require.NoError(t, err)
	err = j.Each(1, 0, func(*journal.Row) error { return nil })
	require.ErrorIs(t, err, journalfile.ErrCorrupt)
	assert.Contains(t, err.Error(), "row 9")
	require.NoError(t, j.Close())
}

// A meta page whose checksum alone fails is what a crash tearing bbolt's last write of a commit
// leaves: every open reads the journal as of the other meta page, the commit before.
func TestOpenTornMeta(t *testing.T) {
	t.Parallel()
	good := goodJournal(t, 40)
	data, err := os.ReadFile(good)
	require.NoError(t, err)
	pageSize, _, _, _ := pageFacts(t, good)
	for page := 0; page < 2; page++ {
		torn := append([]byte(nil), data...)
		torn[page*pageSize+16+56] ^= 0xff // the first byte of the meta's checksum
		path := filepath.Join(t.TempDir(), "journal.db")
		require.NoError(t, os.WriteFile(path, torn, 0o600))
		for name, open := range map[string]func(string) (*journalfile.Journal, error){"OpenReadOnly": journalfile.OpenReadOnly, "OpenReader": journalfile.OpenReader} {
			j, err := open(path)
			require.NoError(t, err, "%s, meta page %d torn", name, page)
			n := 0
			require.NoError(t, j.Each(1, 0, func(*journal.Row) error { n++; return nil }))
			assert.GreaterOrEqual(t, n, 39, "%s, meta page %d torn: the rows of every commit but the last", name, page)
			require.NoError(t, j.Close())
		}
	}
}

func TestLockedInProcess(t *testing.T) {
	t.Parallel()
	// bbolt locks with flock, which binds to the open file, not the process:
	// a second handle in the same process is refused like another process.
	j, path := journalfiletest.Create(t)
	_, err := j.Write(journalfiletest.SampleRows(1)...)
	require.NoError(t, err)

	start := time.Now()
	_, err = journalfile.Open(path)
	assert.ErrorIs(t, err, journalfile.ErrLocked)
	assert.Less(t, time.Since(start), 5*time.Second, "the open must give up quickly")
	_, err = journalfile.OpenReadOnly(path)
	assert.ErrorIs(t, err, journalfile.ErrLocked, "a reader must wait for the writer")
	require.NoError(t, j.Close())

	// Readers share; a writer waits for them.
	r1, err := journalfile.OpenReadOnly(path)
	require.NoError(t, err)
	r2, err := journalfile.OpenReadOnly(path)
	require.NoError(t, err)
	_, err = journalfile.Open(path)
	assert.ErrorIs(t, err, journalfile.ErrLocked)
	require.NoError(t, r1.Close())
	require.NoError(t, r2.Close())

	j, err = journalfile.Open(path)
	require.NoError(t, err)
	require.NoError(t, j.Close())
}

// TestHoldLockHelper is not a test on its own: TestLockedAcrossProcesses runs
// the test binary with it to hold a journal open from another process.
func TestHoldLockHelper(t *testing.T) {
	path := os.Getenv("CRW_JOURNAL_HOLD")
	if path == "" {
		t.Skip("helper process for TestLockedAcrossProcesses")
	}
	j, err := journalfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("held\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLockedAcrossProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a process")
	}
	j, path := journalfiletest.Create(t)
	_, err := j.Write(journalfiletest.SampleRows(1)...)
	require.NoError(t, err)
	require.NoError(t, j.Close())

	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldLockHelper$")
	cmd.Env = append(os.Environ(), "CRW_JOURNAL_HOLD="+path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", line)

	_, err = journalfile.Open(path)
	assert.ErrorIs(t, err, journalfile.ErrLocked)
	_, err = journalfile.OpenReadOnly(path)
	assert.ErrorIs(t, err, journalfile.ErrLocked)

	require.NoError(t, stdin.Close())
	_, _ = io.Copy(io.Discard, stdout)
	require.NoError(t, cmd.Wait())

	j = journalfiletest.Reopen(t, path)
	assert.Equal(t, uint64(1), j.LastSeq())
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	path := goodJournal(t, 4)
	before := digest(t, path)
	j, err := journalfile.OpenReadOnly(path)
	require.NoError(t, err)

	assert.Equal(t, "run-good", j.RunID())
	assert.Equal(t, uint64(0), j.Append(journalfiletest.SampleRows(1)...), "rows are kept out")
	assert.ErrorIs(t, j.Sync(1), journalfile.ErrReadOnly)
	_, err = j.Write(journalfiletest.SampleRows(1)...)
	assert.ErrorIs(t, err, journalfile.ErrReadOnly)
	rows, err := j.Rows()
	require.NoError(t, err)
	assert.Len(t, rows, 4)
	require.NoError(t, j.Close())
	assert.Equal(t, before, digest(t, path))
}

// TestOpenReadingReadsTheCheckedFile: OpenReading gives its read the journal read-only, on the
// file it checks, before it opens it to write; the journal it returns writes. An error of
// read's is OpenReading's, and the file is then neither opened to write nor changed; a file
// that does not open is never given to read.
func TestOpenReadingReadsTheCheckedFile(t *testing.T) {
	t.Parallel()
	path := goodJournal(t, 40)
	var read []uint64
	var given *journalfile.Journal
	j, err := journalfile.OpenReading(path, func(ro *journalfile.Journal) error {
		given = ro
		assert.Equal(t, uint64(0), ro.Append(journalfiletest.SampleRows(1)...), "the journal read is given is read-only")
		assert.ErrorIs(t, ro.Sync(1), journalfile.ErrReadOnly)
		return ro.Each(1, 0, func(r *journal.Row) error {
			read = append(read, r.Seq)
			return nil
		})
	})
	require.NoError(t, err)
	require.Len(t, read, 40)
	assert.Equal(t, uint64(1), read[0])
	assert.Equal(t, uint64(40), read[39])
	seq, err := j.Write(journalfiletest.SampleRows(1)...)
	require.NoError(t, err)
	assert.Equal(t, uint64(41), seq, "the journal OpenReading returns writes after the rows read")
	assert.Error(t, given.Each(1, 0, func(*journal.Row) error { return nil }), "the journal read was given is closed once read returned")
	require.NoError(t, j.Close())

	before := digest(t, path)
	refused := errors.New("refused by read")
	_, err = journalfile.OpenReading(path, func(*journalfile.Journal) error { return refused })
	assert.Equal(t, refused, err, "read's error, as it is")
	assert.Equal(t, before, digest(t, path), "a read that failed leaves the file as it was")
	j, err = journalfile.Open(path)
	require.NoError(t, err, "and lets it go")
	require.NoError(t, j.Close())

	damaged := filepath.Join(t.TempDir(), "journal.db")
	require.NoError(t, os.WriteFile(damaged, []byte(strings.Repeat("this is not a database\n", 1000)), 0o600))
	_, err = journalfile.OpenReading(damaged, func(*journalfile.Journal) error {
		t.Error("read was given a file that failed the check")
		return nil
	})
	assert.ErrorIs(t, err, journalfile.ErrCorrupt)
}

// A file read while it is checked (OpenRun) that fails the check gives the check's error,
// whatever read made of it: read is given such a file at once, beside its check, and what it
// did then counts for nothing. The file is not opened to write.
func TestOpenReadingOfAFileThatFailsItsCheckGivesTheChecksError(t *testing.T) {
	t.Parallel()
	path := goodJournal(t, 40)
	data := mustRead(t, path)
	// Every copy of row 20 (the file's free pages may hold older ones) says seq 21: the
	// checksum of the one the file reads no longer holds.
	require.Positive(t, bytes.Count(data, []byte(`"seq":20,`)), "row 20 is in the file")
	data = bytes.ReplaceAll(data, []byte(`"seq":20,`), []byte(`"seq":21,`))
	require.NoError(t, os.WriteFile(path, data, 0o600))
	before := digest(t, path)

	for name, outcome := range map[string]error{"read passes": nil, "read refuses": errors.New("refused by read")} {
		given := 0
		j, err := journalfile.OpenReading(path, func(ro *journalfile.Journal) error {
			given++
			_ = ro.Each(1, 0, func(*journal.Row) error { return nil })
			return outcome
		})
		if err == nil {
			j.Close()
		}
		assert.ErrorIs(t, err, journalfile.ErrCorrupt, name)
		assert.ErrorContains(t, err, "row 20", name)
		assert.Equal(t, 1, given, "%s: read was given the file beside its check", name)
		assert.Equal(t, before, digest(t, path), "%s: nothing was written", name)
	}
}

func TestScan(t *testing.T) {
	t.Parallel()
	j, _ := journalfiletest.Create(t)
	_, err := j.Write(journalfiletest.SampleRows(10)...)
	require.NoError(t, err)
	stop := errors.New("stop")

	tests := []struct {
		name    string
		from    uint64
		stopAt  uint64 // fn returns stop at this seq; 0 never
		want    []uint64
		wantErr error
	}{
		{name: "all from 0", from: 0, want: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{name: "from middle", from: 8, want: []uint64{8, 9, 10}},
		{name: "past the end", from: 11},
		{name: "fn error stops", from: 3, stopAt: 5, want: []uint64{3, 4, 5}, wantErr: stop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []uint64
			err := j.Scan(tt.from, func(r *journal.Row) error {
				got = append(got, r.Seq)
				if r.Seq == tt.stopAt {
					return stop
				}
				return nil
			})
			if tt.wantErr != nil {
				assert.Same(t, tt.wantErr, err, "fn's error comes back as is")
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestEachGivesTheRowsScanDoes: Each, pipelined (a reading longer than a batch) or not, gives
// fn the rows Scan gives, from where it is asked to up to its limit, across the boundaries of
// its chunks (1,024 rows) and batches (64, at most four a decoder, reused); fn's error comes
// back as is, and no row after it is given.
func TestEachGivesTheRowsScanDoes(t *testing.T) {
	t.Parallel()
	const n = 2600
	j, _ := journalfiletest.Create(t)
	last, err := j.Write(journalfiletest.SampleRows(n)...)
	require.NoError(t, err)
	require.NoError(t, j.Sync(last))
	var all []journal.Row
	require.NoError(t, j.Scan(1, func(r *journal.Row) error { all = append(all, *r); return nil }))
	require.Len(t, all, n)

	for _, tt := range []struct {
		from  uint64
		limit int
	}{
		{1, 0}, {0, 0}, {1, 1}, {1, 63}, {1, 64}, {1, 65}, {1, 255}, {1, 256}, {1, 257}, {1, 1023}, {1, 1024}, {1, 1025},
		{1, 2599}, {1, 2600}, {1, 9000}, {2, 0}, {256, 300}, {1024, 0}, {1025, 1024}, {2600, 0},
		{2601, 0}, {2000, 1000}, {553, 0}, {1577, 0}, // the last chunk full: an empty one ends the reading
	} {
		var got []journal.Row
		require.NoError(t, j.Each(tt.from, tt.limit, func(r *journal.Row) error { got = append(got, *r); return nil }))
		first := max(tt.from, 1)
		last := uint64(n)
		if tt.limit > 0 {
			last = min(last, first+uint64(tt.limit)-1)
		}
		var want []journal.Row
		if first <= uint64(n) {
			want = all[first-1 : last]
		}
		require.Equal(t, len(want), len(got), "from %d limit %d", tt.from, tt.limit)
		for i := range want {
			require.Equal(t, want[i], got[i], "from %d limit %d: row %d", tt.from, tt.limit, want[i].Seq)
		}
	}

	stop := errors.New("stop")
	for _, at := range []uint64{1, 64, 65, 256, 257, 1024, 1500, n} {
		var seen []uint64
		err := j.Each(1, 0, func(r *journal.Row) error {
			seen = append(seen, r.Seq)
			if r.Seq == at {
				return stop
			}
			return nil
		})
		assert.Same(t, stop, err, "fn's error at row %d comes back as is", at)
		require.Len(t, seen, int(at), "rows given up to fn's error at %d", at)
		assert.Equal(t, at, seen[len(seen)-1])
	}
}

// TestEachStopsAtAnUnreadableRowFarIn: a row that is not JSON under its checksum far into a
// long journal is an error naming it, after fn was given every row before it and none after.
func TestEachStopsAtAnUnreadableRowFarIn(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.db")
	good, err := os.ReadFile(goodJournal(t, 2000))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, good, 0o600))
	require.NoError(t, journalfile.PutSealed(path, 1300, []byte(`{"seq":1300,"ty`)))
	j, err := journalfile.OpenReader(path)
	require.NoError(t, err)
	defer j.Close()
	var last uint64
	n := 0
	err = j.Each(1, 0, func(r *journal.Row) error { last, n = r.Seq, n+1; return nil })
	require.ErrorIs(t, err, journalfile.ErrCorrupt)
	assert.Contains(t, err.Error(), "row 1300")
	assert.Equal(t, 1299, n)
	assert.Equal(t, uint64(1299), last)
}

// freelistPage is the id of the page that lists the journal's free pages at path.
func freelistPage(t *testing.T, path string) int {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Minute, PreLoadFreelist: true})
	require.NoError(t, err)
	defer db.Close()
	found := -1
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		for id := 0; int64(id) < tx.Size()/int64(db.Info().PageSize); id++ {
			p, err := tx.Page(id)
			if err != nil {
				return err
			}
			if p != nil && p.Type == "freelist" {
				found = id
			}
		}
		return nil
	}))
	require.GreaterOrEqual(t, found, 2, "no page lists the free pages")
	return found
}

// freelistPages counts the pages of the journal at path that hold bbolt's list of free pages.
func freelistPages(t *testing.T, path string) int {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Minute, PreLoadFreelist: true})
	require.NoError(t, err)
	defer db.Close()
	n := 0
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		for id := 0; int64(id) < tx.Size()/int64(db.Info().PageSize); id++ {
			p, err := tx.Page(id)
			if err != nil {
				return err
			}
			if p != nil && p.Type == "freelist" {
				n++
			}
		}
		return nil
	}))
	return n
}

// A writer's commits write the list of the file's free pages, one page, which the next writer
// reads instead of walking every page for them; a writer that wrote nothing writes nothing.
func TestAWriterKeepsOneListOfItsFreePages(t *testing.T) {
	t.Parallel()
	j, path := journalfiletest.Create(t)
	for range 20 {
		_, err := j.Write(journalfiletest.SampleRows(10)...)
		require.NoError(t, err)
	}
	require.NoError(t, j.Close())
	assert.Equal(t, 1, freelistPages(t, path), "after the first close")

	j = journalfiletest.Reopen(t, path)
	_, err := j.Write(journalfiletest.SampleRows(10)...)
	require.NoError(t, err)
	require.NoError(t, j.Close())
	assert.Equal(t, 1, freelistPages(t, path), "after the second close")

	// A writer that wrote nothing (a resume refused once the journal was open) leaves the file
	// as it found it.
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, journalfiletest.Reopen(t, path).Close())
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(before, after), "a writer that wrote nothing changed the file")

	ro, err := journalfile.OpenReadOnly(path) // bbolt's consistency check: no page lost or twice free
	require.NoError(t, err)
	defer ro.Close()
	rows, err := ro.Rows()
	require.NoError(t, err)
	assert.Len(t, rows, 210)
}
