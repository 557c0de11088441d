package rowlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frame is one rows frame as a test wrote it.
type frame struct {
	first uint64
	rows  []string
}

func readAll(t *testing.T, path string) ([]frame, State) {
	t.Helper()
	var got []frame
	l, st, err := Open(path, func(first uint64, rows [][]byte) error {
		f := frame{first: first}
		for _, r := range rows {
			f.rows = append(f.rows, string(r))
		}
		got = append(got, f)
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, l.Close())
	return got, st
}

func rowsOf(rows ...string) [][]byte {
	out := make([][]byte, len(rows))
	for i, r := range rows {
		out[i] = []byte(r)
	}
	return out
}

func TestFramesReadBackInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db-log")
	l, err := Create(path, "run-a")
	require.NoError(t, err)
	require.NoError(t, l.Append(1, rowsOf(`{"seq":1}`, `{"seq":2}`)))
	require.NoError(t, l.Append(3, rowsOf(`{"seq":3}`)))
	require.NoError(t, l.Checkpoint(3))
	require.NoError(t, l.Append(4, rowsOf(`{"seq":4}`, `{"seq":5}`, `{"seq":6}`)))
	require.NoError(t, l.Close())

	got, st := readAll(t, path)
	assert.Equal(t, []frame{
		{1, []string{`{"seq":1}`, `{"seq":2}`}},
		{3, []string{`{"seq":3}`}},
		{4, []string{`{"seq":4}`, `{"seq":5}`, `{"seq":6}`}},
	}, got)
	assert.Equal(t, "run-a", st.Run)
	assert.Equal(t, BootID(), st.Boot)
	assert.Equal(t, uint64(3), st.Checkpoint)
	assert.Equal(t, uint64(6), st.Last)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, info.Size(), st.End)
}

func TestCreateRefusesAnExistingLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db-log")
	require.NoError(t, os.WriteFile(path, []byte("x"), 0o600))
	_, err := Create(path, "run-a")
	require.ErrorIs(t, err, os.ErrExist)
}

// A write a crash cut short is the log's end: the frames before it read, the rest is cut off
// at the open, and what is appended after reads on.
func TestATornTailIsCutOff(t *testing.T) {
	for name, tear := range map[string]func(data []byte, lastFrame int) []byte{
		"cut in its header":  func(d []byte, at int) []byte { return d[:at+3] },
		"cut in its payload": func(d []byte, at int) []byte { return d[:len(d)-2] },
		"zeros after it":     func(d []byte, at int) []byte { return append(d[:at], make([]byte, 4096)...) },
		"a bit flipped":      func(d []byte, at int) []byte { d[len(d)-1] ^= 1; return d },
		"a length past the file": func(d []byte, at int) []byte {
			binary.LittleEndian.PutUint32(d[at:], 0xffffffff)
			return d
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.db-log")
			l, err := Create(path, "run-a")
			require.NoError(t, err)
			require.NoError(t, l.Append(1, rowsOf("row one", "row two")))
			st := State{End: l.end}
			require.NoError(t, l.Append(3, rowsOf("row three")))
			require.NoError(t, l.Close())
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, tear(data, int(st.End)), 0o600))

			l, st2, err := Open(path, nil)
			require.NoError(t, err)
			assert.Equal(t, uint64(2), st2.Last)
			assert.Equal(t, st.End, st2.End)
			info, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, st.End, info.Size(), "the torn end is cut off")
			require.NoError(t, l.Append(3, rowsOf("row three again")))
			require.NoError(t, l.Close())
			got, _ := readAll(t, path)
			assert.Equal(t, []frame{{1, []string{"row one", "row two"}}, {3, []string{"row three again"}}}, got)
		})
	}
}

// rawFrame is a frame whose payload a test wrote by hand, its checksum right.
func rawFrame(payload []byte) []byte {
	return appendFrame(nil, payload)
}

func rowsPayload(first uint64, rows ...string) []byte {
	p := binary.LittleEndian.AppendUint64([]byte{kindRows}, first)
	for _, r := range rows {
		p = binary.LittleEndian.AppendUint32(p, uint32(len(r)))
		p = append(p, r...)
	}
	return p
}

// Frames that read whole but say what a log cannot: ErrCorrupt, naming the frame, never a
// panic or an allocation of what a length claims.
func TestFramesThatDoNotMakeSense(t *testing.T) {
	boot := rawFrame(bootPayload("b1", "run-a"))
	for name, tt := range map[string]struct {
		data []byte
		want string
	}{
		"no magic":                {[]byte("crw-lgo1"), "no \"crw-log1\""},
		"a magic cut short":       {[]byte("crw-log\x00"), "no \"crw-log1\""},
		"a magic of no format":    {[]byte("crw-log0"), "no \"crw-log1\""},
		"empty":                   {nil, "no \"crw-log1\""},
		"no boot frame":           {[]byte(magic), "no boot frame"},
		"rows before a boot":      {append([]byte(magic), rawFrame(rowsPayload(1, "row xx"))...), "rows before the boot frame"},
		"a gap in seqs":           {cat(boot, rawFrame(rowsPayload(1, "row xx")), rawFrame(rowsPayload(3, "row yy"))), "rows from seq 3 after seq 1"},
		"rows from seq 0":         {cat(boot, rawFrame(rowsPayload(0, "row xx"))), "a rows frame from seq 0"},
		"a row longer than":       {cat(boot, rawFrame(append(rowsPayload(1, "row xx"), 0xff, 0xff, 0xff, 0x7f, 'y'))), "a row cut short"},
		"a rows frame of no rows": {cat(boot, rawFrame(rowsPayload(1))), "without rows"},
		"a checkpoint past":       {cat(boot, rawFrame(checkpointPayload(5))), "checkpoint at seq 5 past the last row 0"},
		"a short checkpoint":      {cat(boot, rawFrame([]byte{kindCheckpoint, 1})), "checkpoint frame of 2 bytes"},
		"an unknown kind":         {cat(boot, rawFrame([]byte{'z', 1})), "frame of kind 'z'"},
		"another run's boot":      {cat(boot, rawFrame(bootPayload("b2", "run-b"))), `boot frame of run "run-b"`},
		"a boot cut short":        {cat(rawFrame([]byte{kindBoot, 9, 'a'})), "boot frame cut short"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.db-log")
			require.NoError(t, os.WriteFile(path, tt.data, 0o600))
			_, _, err := Open(path, nil)
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// A log of a later format (a newer crw's: a higher number after "crw-log") is ErrFormat, not
// damage, said from its first bytes, whatever follows them.
func TestALogOfAnotherFormatIsRefusedFromItsMagic(t *testing.T) {
	boot := rawFrame(bootPayload("b1", "run-a"))
	for _, head := range []string{"crw-log2", "crw-log9"} {
		path := filepath.Join(t.TempDir(), "journal.db-log")
		data := append([]byte(head), boot...)
		require.NoError(t, os.WriteFile(path, append(data, rawFrame(rowsPayload(1, "row xx"))...), 0o600))
		_, _, err := Open(path, nil)
		require.ErrorIs(t, err, ErrFormat, head)
		assert.NotErrorIs(t, err, ErrCorrupt, head)
		assert.ErrorContains(t, err, `it opens with "`+head+`", and this crw reads "crw-log1"`)
		_, err = ReadState(path)
		assert.ErrorIs(t, err, ErrFormat, "a reader's scan says so too")
	}
}

func cat(parts ...[]byte) []byte {
	out := []byte(magic)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestASecondWriterIsLockedOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db-log")
	l, err := Create(path, "run-a")
	require.NoError(t, err)
	defer l.Close()
	_, _, err = Open(path, nil)
	require.ErrorIs(t, err, ErrLocked)
}

func TestSynced(t *testing.T) {
	for _, tt := range []struct {
		st   State
		boot string
		want bool
	}{
		{State{Boot: "b1", Checkpoint: 5, Last: 5, Closed: true}, "b2", true}, // closed: the file fsync'd, nothing after
		{State{Boot: "b1", Checkpoint: 5, Last: 5}, "b2", false},              // opened again, and the machine restarted
		{State{Boot: "b1", Checkpoint: 4, Last: 5}, "b1", true},               // the writer died, the machine did not
		{State{Boot: "b1", Checkpoint: 4, Last: 5}, "b2", false},              // the machine restarted
		{State{Boot: "", Checkpoint: 4, Last: 5}, "", false},                  // no boot id: no telling
		{State{Boot: "b1", Checkpoint: 4, Last: 5}, "", false},
	} {
		assert.Equal(t, tt.want, tt.st.Synced(tt.boot), "%+v at boot %q", tt.st, tt.boot)
	}
}

// A log closed ends in a checkpoint; opened again, it ends in the writer's boot frame, and its
// file is not trusted after a restart until that writer closes it (its commits of the file are
// not fsync'd, and a power loss in the first of them leaves the log as the open left it).
func TestOnlyACloseLeavesTheLogClosed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db-log")
	l, err := Create(path, "run-a")
	require.NoError(t, err)
	require.NoError(t, l.Append(1, rowsOf("row one")))
	require.NoError(t, l.Checkpoint(1))
	require.NoError(t, l.Close())
	_, st := readAll(t, path)
	assert.True(t, st.Closed)
	assert.True(t, Closed(path), "its last bytes are the checkpoint")

	l, _, err = Open(path, nil)
	require.NoError(t, err)
	require.NoError(t, l.Begin(1, "run-a"))
	require.NoError(t, l.Close())
	assert.False(t, Closed(path), "its last bytes are the writer's boot frame")
	_, st = readAll(t, path)
	assert.False(t, st.Closed, "opened and not closed by its writer")
	assert.Equal(t, uint64(1), st.Checkpoint)
}

func TestBootIDFromTheKernelOrNone(t *testing.T) {
	saved := BootIDFile
	defer func() { BootIDFile = saved }()
	dir := t.TempDir()
	BootIDFile = filepath.Join(dir, "boot_id")
	require.NoError(t, os.WriteFile(BootIDFile, []byte("1915e1f7-c39c-441e-8269-4c433f2ad20d\n"), 0o600))
	assert.Equal(t, "1915e1f7-c39c-441e-8269-4c433f2ad20d", BootID())
	BootIDFile = filepath.Join(dir, "none")
	assert.Equal(t, "", BootID())
}

// FuzzOpen: whatever follows the magic, Open gives a state or ErrCorrupt, never a panic, and
// the rows it gives follow one another.
func FuzzOpen(f *testing.F) {
	f.Add(cat(rawFrame(bootPayload("b", "r")), rawFrame(rowsPayload(1, "row aa", "row bb")), rawFrame(checkpointPayload(2))))
	f.Add(cat(rawFrame(bootPayload("b", "r")), rawFrame(rowsPayload(1, "row aa")), []byte{1, 2, 3}))
	f.Add(append([]byte("crw-log2"), rawFrame(bootPayload("b", "r"))...))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "journal.db-log")
		require.NoError(t, os.WriteFile(path, data, 0o600))
		var next uint64 = 1
		l, st, err := Open(path, func(first uint64, rows [][]byte) error {
			if first != next {
				return fmt.Errorf("rows from %d, want %d", first, next)
			}
			next += uint64(len(rows))
			return nil
		})
		if err != nil {
			require.True(t, errors.Is(err, ErrCorrupt) || errors.Is(err, ErrFormat), "%v", err)
			return
		}
		defer l.Close()
		assert.Equal(t, next-1, st.Last)
		assert.LessOrEqual(t, st.Checkpoint, st.Last)
	})
}

// The blocks allocated ahead of the appends read as zeros, the log's end, as a process killed
// before its Close leaves them; Close gives them back.
func TestBlocksAllocatedAheadAreTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db-log")
	l, err := Create(path, "run-a")
	require.NoError(t, err)
	require.NoError(t, l.Append(1, rowsOf("row one")))
	require.NoError(t, l.Append(2, rowsOf("row two")))
	killed, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, int64(len(killed)), l.end, "blocks are allocated ahead")
	assert.Equal(t, int64(len(killed)), l.ahead, "the file's length is where the blocks written ahead end")
	assert.Equal(t, -1, bytes.IndexFunc(killed[l.end:], func(r rune) bool { return r != 0 }), "what follows the frames is zeros")
	require.NoError(t, l.Close())
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, l.end, info.Size())

	copied := filepath.Join(t.TempDir(), "journal.db-log")
	require.NoError(t, os.WriteFile(copied, killed, 0o600))
	got, st := readAll(t, copied)
	assert.Equal(t, []frame{{1, []string{"row one"}}, {2, []string{"row two"}}}, got)
	assert.Equal(t, l.end, st.End)
}

// A frame damaged in the middle of the log is not its end: the frames after it are not cut
// off, and the open says the log is damaged.
func TestAFrameDamagedInTheMiddleIsNotTheEnd(t *testing.T) {
	for name, damage := range map[string]func(data []byte, second int){
		"a bit flipped in its rows": func(d []byte, at int) { d[at+8+12] ^= 1 },
		"its header zeroed":         func(d []byte, at int) { copy(d[at:at+8], make([]byte, 8)) },
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.db-log")
			l, err := Create(path, "run-a")
			require.NoError(t, err)
			require.NoError(t, l.Append(1, rowsOf("row one")))
			second := int(l.end)
			require.NoError(t, l.Append(2, rowsOf("row two")))
			require.NoError(t, l.Append(3, rowsOf("row three")))
			require.NoError(t, l.Checkpoint(3))
			require.NoError(t, l.Close())
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			damage(data, second)
			require.NoError(t, os.WriteFile(path, data, 0o600))

			_, _, err = Open(path, nil)
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), fmt.Sprintf("frame at offset %d", second))
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, data, after, "the log is left as it is")
		})
	}
}

// A crafted frame of empty rows in a sparse file (no blocks on disk behind its length) is
// refused at its first row: a scan's work does not grow with what a length claims.
func TestAFrameOfEmptyRowsIsRefused(t *testing.T) {
	n := int64(16<<20 + 1)
	path := filepath.Join(t.TempDir(), "journal.db-log")
	hdr := []byte{kindRows, 1, 0, 0, 0, 0, 0, 0, 0} // rows from seq 1, then zeros: empty rows
	crc := crc32.Update(crc32.Checksum(hdr, castagnoli), castagnoli, make([]byte, n-int64(len(hdr))))
	var h [headerLen]byte
	binary.LittleEndian.PutUint32(h[:4], uint32(n))
	binary.LittleEndian.PutUint32(h[4:], crc)
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = f.Write(cat(rawFrame(bootPayload("b", "run")), h[:], hdr))
	require.NoError(t, err)
	off, err := f.Seek(0, 1)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(off+n-int64(len(hdr))))
	require.NoError(t, f.Close())
	_, _, err = Open(path, nil)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), "a row of 0 bytes")
}

// A commit of more than a frame holds is written as several frames and reads back whole; a
// row longer than a frame is refused, and the log is as it was.
func TestACommitLargerThanAFrame(t *testing.T) {
	defer SetMaxFrame(64)()
	path := filepath.Join(t.TempDir(), "journal.db-log")
	l, err := Create(path, "run-a")
	require.NoError(t, err)
	rows := rowsOf("row number 1 of six", "row number 2 of six", "row number 3 of six", "row number 4 of six", "row number 5 of six", "row number 6 of six")
	require.NoError(t, l.Append(1, rows))
	end := l.end
	err = l.Append(7, rowsOf(strings.Repeat("x", 60)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "row 7 has 60 bytes, more than a log's frame holds")
	assert.Equal(t, end, l.end)
	require.NoError(t, l.Close())
	got, st := readAll(t, path)
	require.Len(t, got, 3, "two rows a frame")
	var all []string
	for _, f := range got {
		all = append(all, f.rows...)
	}
	assert.Equal(t, []string{"row number 1 of six", "row number 2 of six", "row number 3 of six", "row number 4 of six", "row number 5 of six", "row number 6 of six"}, all)
	assert.Equal(t, uint64(6), st.Last)
}

// An append whose first page a power loss kept from the disk while a later one reached it (a
// header of zeros, then bytes): a torn end, not damage, since no rows frame follows.
func TestAnAppendTornAcrossPagesIsTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db-log")
	l, err := Create(path, "run-a")
	require.NoError(t, err)
	require.NoError(t, l.Append(1, rowsOf("row one")))
	end := l.end
	require.NoError(t, l.Append(2, rowsOf(strings.Repeat("x", 12000))))
	require.NoError(t, l.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	page := (end/4096 + 1) * 4096
	copy(data[end:page], make([]byte, page-end)) // the append's first page lost
	require.NoError(t, os.WriteFile(path, data, 0o600))
	got, st := readAll(t, path)
	assert.Equal(t, []frame{{1, []string{"row one"}}}, got)
	assert.Equal(t, end, st.End)
}

// A frame whose length was damaged in the middle of the log (claiming past the file's end) is
// not its end: the rows frames after it are found.
func TestADamagedLengthInTheMiddleIsNotTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db-log")
	l, err := Create(path, "run-a")
	require.NoError(t, err)
	require.NoError(t, l.Append(1, rowsOf("row one")))
	second := l.end
	require.NoError(t, l.Append(2, rowsOf("row two")))
	require.NoError(t, l.Append(3, rowsOf("row three")))
	require.NoError(t, l.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	binary.LittleEndian.PutUint32(data[second:], 0x7fff0000)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	_, _, err = Open(path, nil)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), "the log goes on")
}

// A log that is not a regular file is refused at once, never waited on.
func TestALogThatIsAFIFOIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db-log")
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	_, err := ReadState(path)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.False(t, Closed(path))
	_, _, err = Open(path, nil)
	require.ErrorIs(t, err, ErrCorrupt)
}

// PlayRestart leaves a log its writer did not close as a machine's restart does: its boot id
// another's (of the same length), the rows as they were, and an append cut short after them
// that an open cuts off; a log its writer closed keeps reading as closed.
func TestPlayRestart(t *testing.T) {
	dir := t.TempDir()
	saved := BootIDFile
	defer func() { BootIDFile = saved }()
	BootIDFile = filepath.Join(dir, "boot_id")
	require.NoError(t, os.WriteFile(BootIDFile, []byte("1915e1f7-c39c-441e-8269-4c433f2ad20d\n"), 0o600))
	killed := filepath.Join(dir, "killed-log")
	l, err := Create(killed, "run-a")
	require.NoError(t, err)
	require.NoError(t, l.Append(1, rowsOf("row one", "row two")))
	require.NoError(t, l.Close()) // its writer died: no checkpoint
	_, before := readAll(t, killed)
	closed, err := PlayRestart(killed, 100)
	require.NoError(t, err)
	assert.False(t, closed)
	info, err := os.Stat(killed)
	require.NoError(t, err)
	assert.Greater(t, info.Size(), before.End, "an append cut short follows the last frame")
	frames, after := readAll(t, killed)
	assert.Equal(t, before.Last, after.Last)
	assert.Equal(t, []frame{{1, []string{"row one", "row two"}}}, frames)
	assert.Len(t, after.Boot, len(before.Boot))
	assert.NotEqual(t, before.Boot, after.Boot)
	assert.False(t, after.Synced(before.Boot), "the machine restarted since its writer opened it")
	assert.Equal(t, before.End, after.End, "the append cut short is no frame: the open cut it off")

	shut := filepath.Join(dir, "closed-log")
	l, err = Create(shut, "run-b")
	require.NoError(t, err)
	require.NoError(t, l.Append(1, rowsOf("row one")))
	require.NoError(t, l.Checkpoint(1))
	require.NoError(t, l.Close())
	closed, err = PlayRestart(shut, 100)
	require.NoError(t, err)
	assert.True(t, closed)
	assert.True(t, Closed(shut), "nothing follows its checkpoint")
}

// A writer's open writes its boot id to the log's boot file before its boot frame; LastBoot
// reads it there, and scans the log when the file says nothing.
func TestTheBootFileSaysTheLastWritersBoot(t *testing.T) {
	dir := t.TempDir()
	boot := fakeBoots(t, dir)
	path := filepath.Join(dir, "journal.db-log")
	boot("boot-one")
	l, err := Create(path, "run-a")
	require.NoError(t, err)
	require.NoError(t, l.Append(1, rowsOf("row one")))
	require.NoError(t, l.Close())
	data, err := os.ReadFile(BootFile(path))
	require.NoError(t, err)
	assert.Equal(t, "boot-one\n", string(data))
	info, err := os.Stat(BootFile(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	boot("boot-two")
	l, _, err = Open(path, nil)
	require.NoError(t, err)
	require.NoError(t, l.Begin(1, "run-a"))
	require.NoError(t, l.Close())
	last, err := LastBoot(path)
	require.NoError(t, err)
	assert.Equal(t, "boot-two", last)

	for name, content := range map[string]*string{"missing": nil, "cut short": ptr("boot-t"), "empty": ptr("")} {
		if content == nil {
			require.NoError(t, os.Remove(BootFile(path)))
		} else {
			require.NoError(t, os.WriteFile(BootFile(path), []byte(*content), 0o600))
		}
		last, err := LastBoot(path)
		require.NoError(t, err, name)
		assert.Equal(t, "boot-two", last, "%s: the log's last boot frame says", name)
	}
}

func ptr(s string) *string { return &s }

// fakeBoots has BootID read a file in dir for the test, and returns what says the machine's
// boot is id.
func fakeBoots(t *testing.T, dir string) func(id string) {
	saved := BootIDFile
	t.Cleanup(func() { BootIDFile = saved })
	BootIDFile = filepath.Join(dir, "boot_id")
	return func(id string) { require.NoError(t, os.WriteFile(BootIDFile, []byte(id+"\n"), 0o600)) }
}

// A writer that opens the log in the boot its boot file says already leaves the file as it is
// (no file made and fsync'd again); one that says another boot, or nothing, is written.
func TestABootFileThatSaysThisBootIsKept(t *testing.T) {
	dir := t.TempDir()
	boot := fakeBoots(t, dir)
	path := filepath.Join(dir, "journal.db-log")
	boot("boot-one")
	l, err := Create(path, "run-a")
	require.NoError(t, err)
	require.NoError(t, l.Close())
	// kept begins a writer and reports whether the boot file is still the file it was: the
	// file held open keeps its inode from being given to a file made again.
	kept := func() bool {
		t.Helper()
		f, err := os.Open(BootFile(path))
		require.NoError(t, err)
		defer f.Close()
		l, _, err := Open(path, nil)
		require.NoError(t, err)
		require.NoError(t, l.Begin(0, "run-a"))
		require.NoError(t, l.Close())
		was, err := f.Stat()
		require.NoError(t, err)
		now, err := os.Stat(BootFile(path))
		require.NoError(t, err)
		return os.SameFile(was, now)
	}
	said := func() string {
		t.Helper()
		data, err := os.ReadFile(BootFile(path))
		require.NoError(t, err)
		return string(data)
	}
	assert.True(t, kept(), "the same boot: the file is kept")
	assert.Equal(t, "boot-one\n", said())
	assert.True(t, OpenedInThisBoot(path))

	boot("boot-two")
	assert.False(t, kept(), "another boot: the file is made again")
	assert.Equal(t, "boot-two\n", said())

	require.NoError(t, os.Remove(BootFile(path)))
	require.NoError(t, os.WriteFile(BootFile(path), []byte("boot-t"), 0o600))
	assert.False(t, kept(), "a file that says nothing is made again")
	assert.Equal(t, "boot-two\n", said())

	// A file others may write, that says this boot, is not the writer's own either.
	require.NoError(t, os.Chmod(BootFile(path), 0o666))
	assert.False(t, kept(), "a file others may write is made again")
	info, err := os.Stat(BootFile(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	// A hard link to another file that says this boot is not the writer's own: it is made
	// again, and the other file is left as it was.
	elsewhere := filepath.Join(dir, "elsewhere")
	require.NoError(t, os.WriteFile(elsewhere, []byte("boot-two\n"), 0o600))
	require.NoError(t, os.Remove(BootFile(path)))
	require.NoError(t, os.Link(elsewhere, BootFile(path)))
	assert.False(t, kept(), "a hard link is made again")
	assert.Equal(t, "boot-two\n", said())
	other, err := os.Stat(elsewhere)
	require.NoError(t, err)
	now, err := os.Stat(BootFile(path))
	require.NoError(t, err)
	assert.False(t, os.SameFile(other, now))
	assert.Equal(t, uint64(1), uint64(other.Sys().(*syscall.Stat_t).Nlink), "the link was taken away")
}

// A commit of more than a frame is written a frame at a time, each fsync'd before the next: a
// power loss tears the frame being written, whose pages read as zeros, and no frame follows it:
// the open cuts it off and keeps the frames before it (rows none was told were durable).
func TestACommitLargerThanAFrameTornInItsLastFrame(t *testing.T) {
	defer SetMaxFrame(64)()
	path := filepath.Join(t.TempDir(), "journal.db-log")
	l, err := Create(path, "run-a")
	require.NoError(t, err)
	rows := rowsOf("row number 1 of six", "row number 2 of six", "row number 3 of six", "row number 4 of six", "row number 5 of six", "row number 6 of six")
	var synced []int64
	l.synced = func(end int64) { synced = append(synced, end) }
	start := l.end
	require.NoError(t, l.Append(1, rows))
	require.NoError(t, l.Close())
	frameLen := int64(headerLen + 1 + 8 + 2*(4+len("row number 5 of six")))
	assert.Equal(t, []int64{start + frameLen, start + 2*frameLen, start + 3*frameLen}, synced, "each frame fsync'd before the next is written")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	last := len(data) - int(frameLen)
	for i := last + 4; i < len(data); i++ {
		data[i] = 0 // its length written, the rest of its page lost
	}
	require.NoError(t, os.WriteFile(path, data, 0o600))
	got, st := readAll(t, path)
	assert.Equal(t, []frame{{1, []string{"row number 1 of six", "row number 2 of six"}}, {3, []string{"row number 3 of six", "row number 4 of six"}}}, got)
	assert.Equal(t, uint64(4), st.Last)
	assert.Equal(t, int64(last), st.End)

	l, err = Create(filepath.Join(t.TempDir(), "journal.db-log"), "run-b")
	require.NoError(t, err)
	defer l.Close()
	end := l.end
	err = l.Append(1, rowsOf("row number 1", strings.Repeat("x", 60)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "row 2 has 60 bytes, more than a log's frame holds")
	assert.Equal(t, end, l.end, "nothing of a commit with a row too long is written")
}
