// Package rowlog is a journal's log: each commit's rows appended to one file and made durable
// by one fdatasync, before the journal's bbolt file takes them without an fsync of its own.
//
// A commit of the bbolt file alone costs two fdatasyncs (its pages, then its meta page); the
// log's costs one, on a file that is only ever appended to. The bbolt file stays what every
// reader reads; the log is what a crash of the machine is recovered from: a bbolt file whose
// commits were not fsync'd may be torn by a power loss, and is then made again from the log's
// rows (see journalfile). A process that dies leaves the bbolt file as its last commit made
// it (its pages are in the page cache), and the log's rows past it are applied at the next
// open.
//
// The file is a magic string, then frames: the payload's length and CRC-32C (little-endian
// uint32 each), then the payload, whose first byte is its kind: a boot frame (the kernel's boot
// id when a writer opened the file, and the run id), a rows frame (a commit: its first seq and
// its rows' stored values) or a checkpoint frame (the bbolt file was fsync'd with every row up
// to a seq). The log ends at its first frame that does not read whole: what a write cut short
// by a crash leaves, and what the next writer cuts off before it appends.
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
	"strings"
	"syscall"
	"time"
)

// magic opens every log file.
const magic = "crw-log1"

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

// minRow is the shortest row a rows frame may hold: a row is JSON and its 4-byte checksum. A
// frame of empty rows would make a scan's work grow with no bytes on disk behind it.
const minRow = 6

// headerLen is a frame's length and checksum.
const headerLen = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is a log that is not one: no magic, or a boot frame that does not read.
var ErrCorrupt = errors.New("corrupt journal log")

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
	f, err := os.Open(path)
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
	ahead int64 // the file's blocks are allocated up to here (preallocate)
	buf   []byte
}

// allocStep is how far ahead of the appends the file's blocks are allocated.
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
	if err := l.append(bootPayload(BootID(), runID)); err != nil {
		_ = f.Close()
		return nil, err
	}
	return l, nil
}

// Open opens the log at path to append, locked, and scans it. The torn tail a crash may have
// left is cut off; fn, if not nil, is given every rows frame in
// order (first seq and stored values, valid until fn returns).
func Open(path string, fn func(first uint64, rows [][]byte) error) (*Log, State, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
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
	f, err := os.Open(path)
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
	l.buf = appendFrame(l.buf[:0], checkpointPayload(seq))
	return l.append(bootPayload(BootID(), runID))
}

// Append writes one commit's rows, first seq first, and fsyncs the log: once it returns they
// are durable. An error leaves the log's end unknown: the writer stops.
// A commit of more than a frame holds is written as several, in one write and one fsync; a
// row longer than a frame, or shorter than a row can be, is refused.
func (l *Log) Append(first uint64, rows [][]byte) error {
	l.buf = l.buf[:0]
	for len(rows) > 0 {
		n, size := 0, 1+8
		for ; n < len(rows) && int64(size+4+len(rows[n])) <= maxFrame; n++ {
			if len(rows[n]) < minRow {
				return fmt.Errorf("journal log: row %d has %d bytes", first+uint64(n), len(rows[n]))
			}
			size += 4 + len(rows[n])
		}
		if n == 0 {
			return fmt.Errorf("journal log: row %d has %d bytes, more than a log's frame holds (%d)", first, len(rows[0]), maxFrame-13)
		}
		p := make([]byte, 0, size)
		p = append(p, kindRows)
		p = binary.LittleEndian.AppendUint64(p, first)
		for _, r := range rows[:n] {
			p = binary.LittleEndian.AppendUint32(p, uint32(len(r)))
			p = append(p, r...)
		}
		if n == len(rows) {
			return l.append(p)
		}
		l.buf = appendFrame(l.buf, p)
		first, rows = first+uint64(n), rows[n:]
	}
	return nil
}

// Checkpoint records that the bbolt file was fsync'd with every row up to seq.
func (l *Log) Checkpoint(seq uint64) error {
	l.buf = l.buf[:0]
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
	if end := l.end + int64(len(l.buf)); end > l.ahead {
		// What follows the frames reads as zeros: a length of 0, the log's end.
		l.ahead = end + allocStep
		preallocate(l.f, l.end, l.ahead-l.end)
	}
	if _, err := l.f.WriteAt(l.buf, l.end); err != nil {
		return fmt.Errorf("journal log: write %s: %w", l.path, err)
	}
	if err := fdatasync(l.f); err != nil {
		return fmt.Errorf("journal log: sync %s: %w", l.path, err)
	}
	l.end += int64(len(l.buf))
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
		if n == 0 {
			// The blocks allocated ahead: nothing may follow.
			if err := zeros(r); err != nil {
				return st, fmt.Errorf("frame at offset %d: %w", st.End, err)
			}
			break
		}
		if n > maxFrame || st.End+headerLen+n > size {
			break // a write cut short as it grew the file
		}
		if int64(cap(payload)) < n {
			payload = make([]byte, n)
		}
		payload = payload[:n]
		if _, err := io.ReadFull(r, payload); err != nil {
			break
		}
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
			// Torn only if nothing was written after it: a frame damaged in the middle
			// of the log is not its end, and the frames after it are not cut off.
			if err := zeros(r); err != nil {
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

// zeros reads what is left of the log after a frame whose checksum fails: a write a crash cut
// short is the last, followed by the zeros of the blocks allocated ahead or by nothing.
func zeros(r io.Reader) error {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			if b != 0 {
				return fmt.Errorf("%w: the log goes on after a frame that does not read", ErrCorrupt)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

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
	if len(id) > 255 || bytes.ContainsAny([]byte(id), "\x00\n") {
		return ""
	}
	return id
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
