// Package rowlog is a journal's log: each commit's rows appended to one file and made durable
// by one fdatasync, once the journal's bbolt file has taken them without an fsync of its own.
//
// A commit of the bbolt file alone costs two fdatasyncs (its pages, then its meta page); the
// log's costs one, on a file that is only ever appended to. The bbolt file stays what every
// reader reads; the log is what a crash of the machine is recovered from: a bbolt file whose
// commits were not fsync'd may be torn by a power loss, and is then made again from the log's
// rows (see journalfile). A process that dies leaves the bbolt file as its last commit made
// it (its pages are in the page cache), and the next open logs what the log lacks of it.
//
// The file is a magic string, then frames: the payload's length and CRC-32C (little-endian
// uint32 each), then the payload, whose first byte is its kind: a boot frame (the kernel's boot
// id when a writer opened the file, and the run id), a rows frame (a commit: its first seq and
// its rows' stored values) or a checkpoint frame (the bbolt file was fsync'd with every row up
// to a seq). The log ends at its first frame that does not read whole, what a write cut short
// by a crash leaves and the next writer cuts off before it appends, unless a rows frame that
// goes on from it follows (damage in the middle of the log: ErrCorrupt).
package rowlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// magic opens every log file. Its number, one digit, is the format of the log and of the rows
// it holds: a crw that writes rows another way (journalfile's keyFormat) writes logs of a higher
// number. The log is what a torn file is made again from, before the file is read (a rebuild
// gives the file the format of this crw's rows), so a crw must refuse a log of rows it cannot
// read from its first bytes: ErrFormat. (A format past 9 needs a magic of its own: a log that
// opened "crw-log10" would pass for this one's magic, and be refused as damage by its frames.)
const magic = magicPrefix + "1"

// magicPrefix opens the log of every format.
const magicPrefix = "crw-log"

// Frame kinds, a payload's first byte.
const (
	kindBoot       = 'b'
	kindRows       = 'r'
	kindCheckpoint = 'c'
)

// maxFrame bounds a frame's payload: a commit of more is written as several frames, and a row
// of more is refused (as etcd's store refuses one past 256 MiB). A scan allocates no more for a
// frame, whatever a length claims. Tests make it smaller.
var maxFrame int64 = 256 << 20

// MaxRow is the longest row a frame holds: a journal refuses a longer one before its commit.
func MaxRow() int { return int(maxFrame) - 1 - 8 - 4 }

// SetMaxFrame makes frames hold at most n bytes until restore is called, for tests of what a
// longer commit or row does.
func SetMaxFrame(n int64) (restore func()) {
	saved := maxFrame
	maxFrame = n
	return func() { maxFrame = saved }
}

// minRow is the shortest row a rows frame may hold: a row is JSON and its 4-byte checksum. A
// frame of empty rows would make a scan's work grow with no bytes on disk behind it.
const minRow = 6

// headerLen is a frame's length and checksum.
const headerLen = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is a log that does not read: no magic, a frame that says what a log cannot, a
// frame damaged in its middle, a file that is not a regular one.
var ErrCorrupt = errors.New("corrupt journal log")

// ErrFormat is a log of a later format than this crw's (a higher number after magicPrefix): a
// newer crw's, whose rows this one cannot read.
var ErrFormat = errors.New("journal log of another format")

// ErrLocked is a log another writer holds.
var ErrLocked = errors.New("journal log locked by another writer")

// State is what a scan of the log found.
type State struct {
	Run string // the run id of the first boot frame
	// Boot is the kernel's boot id the last writer recorded as it opened the log; "" when
	// that kernel gave none.
	Boot string
	// Checkpoint is the last seq the bbolt file was fsync'd with (0: none), Last the last
	// row's seq in the log.
	Checkpoint, Last uint64
	// End is the offset past the last frame that reads whole.
	End int64
	// Closed is whether the log's last frame is a checkpoint: its last writer closed it, the
	// bbolt file fsync'd, and no commit of the file came after (a writer's open appends its
	// boot frame after its checkpoint, and its commits of the file are not fsync'd).
	Closed bool
}

// Synced reports whether the bbolt file may be trusted as it is: its last writer closed the
// log, or the machine has not restarted since that writer opened it (a process that died left
// its pages in the page cache).
func (s State) Synced(boot string) bool {
	return s.Closed || (boot != "" && s.Boot == boot)
}

// Closed reports, from its last bytes alone, whether the log at path ends in a checkpoint: its
// last writer closed it (State.Closed), for a reader that will not read every frame. A log a
// writer holds, or one whose writer died, ends in the zeros of the blocks allocated ahead.
func Closed(path string) bool {
	f, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return false
	}
	defer f.Close()
	info, err := f.Stat()
	const n = headerLen + 9
	if err != nil || info.Size() < int64(len(magic))+n {
		return false
	}
	var b [n]byte
	if _, err := f.ReadAt(b[:], info.Size()-n); err != nil {
		return false
	}
	return binary.LittleEndian.Uint32(b[:4]) == 9 && b[headerLen] == kindCheckpoint &&
		crc32.Checksum(b[headerLen:], castagnoli) == binary.LittleEndian.Uint32(b[4:8])
}

// Log is a log open to append, held by one writer (an exclusive lock on the file).
type Log struct {
	f     *os.File
	path  string
	end   int64 // past the last frame
	ahead int64 // the file's blocks are written up to here (preallocate)
	buf   []byte
	// synced, when not nil, is told the log's end after each fsync (for tests).
	synced func(end int64)
}

// allocStep is how far ahead of the appends the file's blocks are written (preallocate).
const allocStep = 1 << 20

// Path is the log of the journal at dbPath.
func Path(dbPath string) string { return dbPath + "-log" }

// Create makes the log of a new journal: path must not exist. The file and its first boot
// frame are fsync'd; the caller syncs the directory.
func Create(path, runID string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal log: create %s: %w", path, err)
	}
	if err := lock(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("journal log: create %s: %w", path, err)
	}
	l := &Log{f: f, path: path}
	if _, err := f.Write([]byte(magic)); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("journal log: create %s: %w", path, err)
	}
	l.end = int64(len(magic))
	boot := BootID()
	err = writeBoot(path, boot)
	if err == nil {
		err = l.append(bootPayload(boot, runID))
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return l, nil
}

// Open opens the log at path to append, locked, and scans it. The torn tail a crash may have
// left is cut off; fn, if not nil, is given every rows frame in
// order (first seq and stored values, valid until fn returns).
func Open(path string, fn func(first uint64, rows [][]byte) error) (*Log, State, error) {
	f, err := openRegular(path, os.O_RDWR)
	if err != nil {
		return nil, State{}, fmt.Errorf("journal log: open %s: %w", path, err)
	}
	if err := lock(f); err != nil {
		_ = f.Close()
		return nil, State{}, fmt.Errorf("journal log: open %s: %w", path, err)
	}
	st, err := scan(f, fn)
	if err == nil {
		// What follows the last whole frame is a write a crash cut short: appends go there.
		err = f.Truncate(st.End)
	}
	if err != nil {
		_ = f.Close()
		return nil, State{}, fmt.Errorf("journal log: %s: %w", path, err)
	}
	return &Log{f: f, path: path, end: st.End}, st, nil
}

// ReadState scans the log at path as it is, for a reader: no lock taken, nothing cut off.
func ReadState(path string) (State, error) {
	f, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return State{}, fmt.Errorf("journal log: read %s: %w", path, err)
	}
	defer f.Close()
	st, err := scan(f, nil)
	if err != nil {
		return st, fmt.Errorf("journal log: %s: %w", path, err)
	}
	return st, nil
}

// Each reads the rows frames of the log already open as l, in order, as Open's fn does.
func (l *Log) Each(fn func(first uint64, rows [][]byte) error) error {
	if _, err := scan(l.f, fn); err != nil {
		return fmt.Errorf("journal log: %s: %w", l.path, err)
	}
	return nil
}

// Begin appends a checkpoint at seq (the bbolt file was fsync'd with every row up to it) and the
// boot id of this writer, fsync'd: the log is then ready for Append.
func (l *Log) Begin(seq uint64, runID string) error {
	boot := BootID()
	// A boot file of a writer's making that says this boot already is left as it is (a resume
	// in the boot of the run's last writer): made again, it would say the same, at the cost of
	// a file made and fsync'd.
	if !keptBoot(l.path, boot) {
		if err := writeBoot(l.path, boot); err != nil {
			return err
		}
	}
	l.buf = appendFrame(l.buf[:0], checkpointPayload(seq))
	return l.append(bootPayload(boot, runID))
}

// Append writes one commit's rows, first seq first, and fsyncs the log: once it returns they
// are durable. An error leaves the log's end unknown: the writer stops.
// A commit of more than a frame holds is written as several, each written and fsync'd before
// the next: a power loss tears the last frame being written at most, never one a later frame
// follows (which would read as damage in the middle of the log), and leaves the rows of the
// frames before it durable, a part of a commit none of whose writers was told so. A row longer
// than a frame, or shorter than a row can be, is refused before anything is written.
func (l *Log) Append(first uint64, rows [][]byte) error {
	for i, r := range rows {
		if len(r) < minRow {
			return fmt.Errorf("journal log: row %d has %d bytes", first+uint64(i), len(r))
		}
		if int64(1+8+4+len(r)) > maxFrame {
			return fmt.Errorf("journal log: row %d has %d bytes, more than a log's frame holds (%d)", first+uint64(i), len(r), maxFrame-13)
		}
	}
	for len(rows) > 0 {
		n, size := 0, 1+8
		for ; n < len(rows) && int64(size+4+len(rows[n])) <= maxFrame; n++ {
			size += 4 + len(rows[n])
		}
		// The frame is made in place, its header filled in once its payload is there.
		l.buf = slices.Grow(l.buf[:0], headerLen+size)[:headerLen]
		l.buf = append(l.buf, kindRows)
		l.buf = binary.LittleEndian.AppendUint64(l.buf, first)
		for _, r := range rows[:n] {
			l.buf = binary.LittleEndian.AppendUint32(l.buf, uint32(len(r)))
			l.buf = append(l.buf, r...)
		}
		payload := l.buf[headerLen:]
		binary.LittleEndian.PutUint32(l.buf, uint32(len(payload)))
		binary.LittleEndian.PutUint32(l.buf[4:], crc32.Checksum(payload, castagnoli))
		if err := l.write(); err != nil {
			return err
		}
		first, rows = first+uint64(n), rows[n:]
	}
	return nil
}

// Checkpoint records that the bbolt file was fsync'd with every row up to seq, as a writer
// closes the log: the blocks allocated ahead are given back first, so that the fsync of the
// checkpoint makes the log end with it (a reader reads only its last bytes: Closed).
func (l *Log) Checkpoint(seq uint64) error {
	if err := l.f.Truncate(l.end); err != nil {
		return fmt.Errorf("journal log: %s: %w", l.path, err)
	}
	l.buf = l.buf[:0]
	l.ahead = l.end + headerLen + 9
	return l.append(checkpointPayload(seq))
}

// Close lets the log go, the blocks allocated past its last frame given back.
func (l *Log) Close() error {
	err := l.f.Truncate(l.end)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// append writes what l.buf holds and the frame of payload at the log's end, then fsyncs.
func (l *Log) append(payload []byte) error {
	l.buf = appendFrame(l.buf, payload)
	return l.write()
}

// write writes the frames l.buf holds at the log's end, then fsyncs.
func (l *Log) write() error {
	if end := l.end + int64(len(l.buf)); end > l.ahead {
		// What follows the frames reads as zeros: a length of 0, the log's end.
		from := max(l.ahead, l.end)
		l.ahead = end + allocStep
		preallocate(l.f, from, l.ahead-from)
	}
	if _, err := l.f.WriteAt(l.buf, l.end); err != nil {
		return fmt.Errorf("journal log: write %s: %w", l.path, err)
	}
	if err := fdatasync(l.f); err != nil {
		return fmt.Errorf("journal log: sync %s: %w", l.path, err)
	}
	l.end += int64(len(l.buf))
	if l.synced != nil {
		l.synced(l.end)
	}
	if cap(l.buf) > 1<<20 {
		l.buf = nil // a large commit's buffer is not kept for the small ones after it
	}
	return nil
}

func appendFrame(dst, payload []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	return append(dst, payload...)
}

func bootPayload(boot, runID string) []byte {
	p := []byte{kindBoot, byte(len(boot))}
	p = append(p, boot...)
	return append(p, runID...)
}

func checkpointPayload(seq uint64) []byte {
	return binary.LittleEndian.AppendUint64([]byte{kindCheckpoint}, seq)
}

// scan reads the log from its start. Rows frames must follow one another without a gap in
// their seqs; a frame that does not read whole is the end.
func scan(f *os.File, fn func(first uint64, rows [][]byte) error) (State, error) {
	var st State
	info, err := f.Stat()
	if err != nil {
		return st, err
	}
	size := info.Size()
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<20)
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(r, head); err != nil || string(head) != magic {
		if n := head[len(head)-1]; err == nil && strings.HasPrefix(string(head), magicPrefix) && n > magic[len(magic)-1] && n <= '9' {
			return st, fmt.Errorf("%w: it opens with %q, and this crw reads %q (a newer crw wrote it)", ErrFormat, head, magic)
		}
		return st, fmt.Errorf("%w: no %q at its start", ErrCorrupt, magic)
	}
	st.End = int64(len(magic))
	var payload []byte
	var scratch [][]byte
	for {
		var h [headerLen]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			break
		}
		n := int64(binary.LittleEndian.Uint32(h[:4]))
		whole := n > 0 && n <= maxFrame && st.End+headerLen+n <= size
		if whole {
			if int64(cap(payload)) < n {
				payload = make([]byte, n)
			}
			payload = payload[:n]
			_, err := io.ReadFull(r, payload)
			whole = err == nil && crc32.Checksum(payload, castagnoli) == binary.LittleEndian.Uint32(h[4:])
		}
		if !whole {
			// The end, where a crash cut the last append short, unless the log goes on.
			if err := continues(f, st.End, size, st.Last); err != nil {
				return st, fmt.Errorf("frame at offset %d: %w", st.End, err)
			}
			break
		}
		if err := st.read(payload, fn, &scratch); err != nil {
			return st, fmt.Errorf("frame at offset %d: %w", st.End, err)
		}
		st.End += headerLen + n
	}
	if st.Run == "" {
		return st, fmt.Errorf("%w: no boot frame", ErrCorrupt)
	}
	return st, nil
}

// continues is ErrCorrupt when the log goes on after the frame at offset at, which does not
// read whole: a rows frame that reads whole and follows the rows read (first seq past last)
// starts somewhere after it. A crash that cut the last append short leaves some of its pages
// and not others, zeros after them, and no such frame (an append holds one rows frame, Append
// writing a larger commit a frame at a time, each fsync'd, or a checkpoint and a boot frame);
// a frame damaged in the middle of the log has the frames of the commits after it behind it,
// which are not cut off. The search reads at most what a torn end
// can hold, and checks at most searchBudget bytes of candidates' payloads.
func continues(f *os.File, at, size int64, last uint64) error {
	rest := size - at
	if rest > maxFrame+2*allocStep {
		return fmt.Errorf("%w: %d bytes follow a frame that does not read, more than a write cut short leaves", ErrCorrupt, rest)
	}
	b := make([]byte, rest)
	if _, err := f.ReadAt(b, at); err != nil && err != io.EOF {
		return err
	}
	budget := searchBudget
	for o := 1; o+headerLen+9 <= len(b); o++ {
		n := int(binary.LittleEndian.Uint32(b[o:]))
		if n < 9 || o+headerLen+n > len(b) || b[o+headerLen] != kindRows ||
			binary.LittleEndian.Uint64(b[o+headerLen+1:]) <= last {
			continue
		}
		if budget -= n; budget < 0 {
			return fmt.Errorf("%w: cannot tell a torn end from damage after the frame that does not read", ErrCorrupt)
		}
		if crc32.Checksum(b[o+headerLen:o+headerLen+n], castagnoli) == binary.LittleEndian.Uint32(b[o+4:]) {
			return fmt.Errorf("%w: the log goes on after a frame that does not read (a rows frame at offset %d)", ErrCorrupt, at+int64(o))
		}
	}
	return nil
}

// searchBudget bounds the payload bytes continues checksums.
const searchBudget = 64 << 20

// read takes in one whole frame; scratch holds the rows of the frame before, for fn.
func (st *State) read(p []byte, fn func(first uint64, rows [][]byte) error, scratch *[][]byte) error {
	st.Closed = p[0] == kindCheckpoint
	switch p[0] {
	case kindBoot:
		if len(p) < 2 || len(p) < 2+int(p[1]) {
			return fmt.Errorf("%w: a boot frame cut short", ErrCorrupt)
		}
		st.Boot = string(p[2 : 2+int(p[1])])
		if run := string(p[2+int(p[1]):]); st.Run == "" {
			st.Run = run
		} else if run != st.Run {
			return fmt.Errorf("%w: a boot frame of run %q in the log of run %q", ErrCorrupt, run, st.Run)
		}
	case kindCheckpoint:
		if len(p) != 9 {
			return fmt.Errorf("%w: a checkpoint frame of %d bytes", ErrCorrupt, len(p))
		}
		seq := binary.LittleEndian.Uint64(p[1:])
		if seq > st.Last {
			return fmt.Errorf("%w: a checkpoint at seq %d past the last row %d", ErrCorrupt, seq, st.Last)
		}
		st.Checkpoint = seq
	case kindRows:
		if st.Run == "" {
			return fmt.Errorf("%w: rows before the boot frame", ErrCorrupt)
		}
		rows, first, n, err := splitRows(p, (*scratch)[:0], fn != nil)
		if err != nil {
			return err
		}
		if first != st.Last+1 {
			return fmt.Errorf("%w: rows from seq %d after seq %d", ErrCorrupt, first, st.Last)
		}
		if fn != nil {
			*scratch = rows
			if err := fn(first, rows); err != nil {
				return err
			}
		}
		st.Last = first + uint64(n) - 1
	default:
		return fmt.Errorf("%w: a frame of kind %q", ErrCorrupt, p[0])
	}
	return nil
}

// splitRows reads a rows frame's payload: its first seq and its number of rows, and with keep
// the rows themselves, appended to rows.
func splitRows(p []byte, rows [][]byte, keep bool) (_ [][]byte, first uint64, n int, err error) {
	if len(p) < 9 {
		return nil, 0, 0, fmt.Errorf("%w: a rows frame cut short", ErrCorrupt)
	}
	first = binary.LittleEndian.Uint64(p[1:9])
	if first == 0 {
		return nil, 0, 0, fmt.Errorf("%w: a rows frame from seq 0", ErrCorrupt)
	}
	for rest := p[9:]; len(rest) > 0; n++ {
		if len(rest) < 4 || uint64(len(rest)-4) < uint64(binary.LittleEndian.Uint32(rest)) {
			return nil, 0, 0, fmt.Errorf("%w: a row cut short in the rows frame from seq %d", ErrCorrupt, first)
		}
		size := binary.LittleEndian.Uint32(rest)
		if size < minRow {
			return nil, 0, 0, fmt.Errorf("%w: a row of %d bytes in the rows frame from seq %d", ErrCorrupt, size, first)
		}
		if keep {
			rows = append(rows, rest[4:4+size])
		}
		rest = rest[4+size:]
	}
	if n == 0 {
		return nil, 0, 0, fmt.Errorf("%w: a rows frame without rows", ErrCorrupt)
	}
	return rows, first, n, nil
}

// maxBootID bounds a boot id (a boot frame gives its length one byte).
const maxBootID = 255

// BootIDFile is where Linux gives the id of the running kernel's boot. Tests point it at a
// file of their own to play a machine that restarted.
var BootIDFile = "/proc/sys/kernel/random/boot_id"

// BootID is the id of the machine's current boot, "" when the kernel gives none (then no
// writer's death is told from the machine's, and the bbolt file is made again after either).
func BootID() string {
	b, err := os.ReadFile(BootIDFile)
	if err != nil {
		return ""
	}
	id := strings.TrimSpace(string(b))
	if len(id) > maxBootID || bytes.ContainsAny([]byte(id), "\x00\n") {
		return ""
	}
	return id
}

// openRegular opens path with flag, refusing what is not a regular file (a FIFO would block
// its reader, a device give no end) without blocking on it.
func openRegular(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrCorrupt, path)
	}
	return f, nil
}

// lock takes the log's exclusive lock, waiting at most 2 s for another writer to let it go.
func lock(f *os.File) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return fmt.Errorf("%w: %w", ErrLocked, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
