package journalfile_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local/journalfile"
)

// promptJournal writes a closed journal of three prepared rows whose prompts are the words
// given, each found once in the file, and returns its path.
func promptJournal(t *testing.T, prompts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := journalfile.Create(path, "run-sum")
	require.NoError(t, err)
	// One commit, so the file holds no stale copy of a row on a freed page.
	var rows []*journal.Row
	for i, p := range prompts {
		rows = append(rows, &journal.Row{Type: journal.TypePrepared, Call: "c" + string(rune('1'+i)), Index: i + 1, Role: "planner", Prompt: p})
	}
	_, err = j.Write(rows...)
	require.NoError(t, err)
	require.NoError(t, j.Close())
	return path
}

// flipIn changes the one occurrence of old in the file at path into new (of the same length),
// as a bad disk or a stray write would, leaving bbolt's pages well formed.
func flipIn(t *testing.T, path, old, new string) {
	t.Helper()
	require.Len(t, new, len(old))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, 1, bytes.Count(b, []byte(old)), "%q must be in the file once", old)
	require.NoError(t, os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o600))
}

func TestFlippedByteInARowIsFound(t *testing.T) {
	t.Parallel()
	path := promptJournal(t, "alpha plan", "bravo plan", "charlie plan")
	// The row still parses and still says seq 2: only its checksum tells.
	flipIn(t, path, "bravo plan", "bravp plan")
	before := digest(t, path)

	for name, open := range map[string]func(string) (*journalfile.Journal, error){
		"Open": journalfile.Open, "OpenReadOnly": journalfile.OpenReadOnly,
	} {
		j, err := open(path)
		if j != nil {
			_ = j.Close()
		}
		require.ErrorIs(t, err, journalfile.ErrCorrupt, name)
		assert.Contains(t, err.Error(), path, name)
		assert.Contains(t, err.Error(), "row 2: checksum mismatch", name)
		assert.Equal(t, "row 2: checksum mismatch", journalfile.Damage(err)[:len("row 2: checksum mismatch")], name)
	}
	assert.Equal(t, before, digest(t, path), "the damaged file was left as it was")
}

// Damage that comes after the open check (the file changed under a reader) is found by every
// read.
func TestFlippedByteAfterOpenIsFoundByEveryRead(t *testing.T) {
	t.Parallel()
	path := promptJournal(t, "alpha plan", "bravo plan", "charlie plan")
	j, err := journalfile.OpenReadOnly(path)
	require.NoError(t, err)
	defer j.Close()
	// bbolt reads through a shared mapping of the file, so a write to the file shows at once.
	flipIn(t, path, "charlie plan", "charlix plan")

	_, err = j.Rows()
	require.ErrorIs(t, err, journalfile.ErrCorrupt)
	assert.Contains(t, err.Error(), "row 3: checksum mismatch")
	assert.Contains(t, err.Error(), path)

	_, err = j.Raw(1, 10)
	require.ErrorIs(t, err, journalfile.ErrCorrupt)
	assert.Contains(t, err.Error(), "row 3: checksum mismatch")

	var seen []uint64
	err = j.Scan(1, func(r *journal.Row) error { seen = append(seen, r.Seq); return nil })
	require.ErrorIs(t, err, journalfile.ErrCorrupt)
	assert.Contains(t, err.Error(), "row 3: checksum mismatch")
	assert.Equal(t, []uint64{1, 2}, seen, "the rows before the damaged one are read")
}

func TestRawIsTheRowsJSON(t *testing.T) {
	t.Parallel()
	path := promptJournal(t, "alpha plan")
	j, err := journalfile.OpenReadOnly(path)
	require.NoError(t, err)
	defer j.Close()
	raw, err := j.Raw(1, 10)
	require.NoError(t, err)
	require.Len(t, raw, 1)
	assert.Equal(t, byte('}'), raw[0][len(raw[0])-1], "the checksum is not sent to readers")
}

// stripSums turns a journal into one written before rows had a checksum: no format key, and
// each row its bare JSON.
func stripSums(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.Remove(path+"-log"), "such a journal had no log")
	editBolt(t, path, func(tx *bbolt.Tx) error {
		if err := tx.Bucket([]byte("meta")).Delete([]byte("format")); err != nil {
			return err
		}
		b := tx.Bucket([]byte("rows"))
		var keys, vals [][]byte
		err := b.ForEach(func(k, v []byte) error {
			keys = append(keys, append([]byte(nil), k...))
			vals = append(vals, append([]byte(nil), v[:len(v)-4]...))
			return nil
		})
		for i := range keys {
			if err == nil {
				err = b.Put(keys[i], vals[i])
			}
		}
		return err
	})
}

// storedValues returns the rows bucket's values as stored.
func storedValues(t *testing.T, path string) [][]byte {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	var out [][]byte
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("rows")).ForEach(func(_, v []byte) error {
			out = append(out, append([]byte(nil), v...))
			return nil
		})
	}))
	return out
}

func TestJournalWithoutChecksumsStaysReadableAndWritable(t *testing.T) {
	t.Parallel()
	path := promptJournal(t, "alpha plan", "bravo plan")
	stripSums(t, path)

	j, err := journalfile.Open(path)
	require.NoError(t, err)
	_, err = j.Write(&journal.Row{Type: journal.TypeWarning, Reason: "late"})
	require.NoError(t, err)
	rows, err := j.Rows()
	require.NoError(t, err)
	require.NoError(t, j.Close())
	require.Len(t, rows, 3)
	assert.Equal(t, "bravo plan", rows[1].Prompt)
	assert.Equal(t, "late", rows[2].Reason)

	// The file keeps one format: the row appended is bare JSON like the others.
	for i, v := range storedValues(t, path) {
		assert.Equal(t, byte('}'), v[len(v)-1], "row %d", i+1)
	}
	j, err = journalfile.OpenReadOnly(path)
	require.NoError(t, err)
	require.NoError(t, j.Close())
}

func TestUnknownRowFormatIsRefused(t *testing.T) {
	t.Parallel()
	path := promptJournal(t, "alpha plan")
	editBolt(t, path, func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte("9"))
	})
	_, err := journalfile.Open(path)
	require.ErrorIs(t, err, journalfile.ErrSchema)
	assert.Contains(t, err.Error(), `row format "9"`)
}
