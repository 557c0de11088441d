package journal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// TraceFile is a trace read a part at a time from a file, as Import reads one whole: the
// shadow of a trace keeps what a run's shadow keeps of its journal (a page of rows and what
// its deliveries need), not every row. Its first reading goes through the whole trace, with
// Import's checks and errors, and notes where each block of traceBlock lines starts and its
// CRC-32C; a later reading (of the rows of a call the History let go) reads those blocks
// again, and fails if they changed.
type TraceFile struct {
	r     io.ReaderAt
	run   string
	start int64 // where the first row's line starts

	// Once the first reading went through the trace (whole): where each block of rows'
	// lines starts, and where the last ends; each block's CRC-32C (its lines as in the file,
	// line breaks included); how many rows there are.
	blocks    []int64
	sums      []uint32
	rows      uint64
	whole     bool
	committed bool // a row of the trace is a commit intent
}

// traceBlock is how many lines a TraceFile notes the place and checksum of at once: what it
// keeps of a trace is ~0.2 bytes a row, and a reading again reads at most a block more.
const traceBlock = 64

// TraceError is what is wrong with a trace a TraceFile reads, in Import's words (they name its
// line): whoever reads the trace through a History finds it in the History's error, and can
// say which file it is.
type TraceError struct{ err error }

func (e *TraceError) Error() string { return e.err.Error() }
func (e *TraceError) Unwrap() error { return e.err }

// traceErr is err, made a TraceError.
func traceErr(err error) error {
	if err == nil {
		return nil
	}
	var te *TraceError
	if errors.As(err, &te) {
		return err
	}
	return &TraceError{err}
}

var traceTable = crc32.MakeTable(crc32.Castagnoli)

// traceChunk and traceChunkBytes bound the lines a reading decodes at a time, on every core:
// a trace of long lines is read a few at a time (at least one, or one block again).
const (
	traceChunk      = 512
	traceChunkBytes = 8 << 20
)

// OpenTrace reads the header of the trace r holds (a file of it, which must stay open while
// the TraceFile is read), with Import's checks.
func OpenTrace(r io.ReaderAt) (*TraceFile, error) {
	br := bufio.NewReader(io.NewSectionReader(r, 0, math.MaxInt64))
	line, err := br.ReadBytes('\n')
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("journal: import: line 1: %w", err)
	}
	if len(line) == 0 {
		return nil, errors.New("journal: import: line 1: missing header")
	}
	run, err := readHeader(trimLine(line))
	if err != nil {
		return nil, err
	}
	return &TraceFile{r: r, run: run, start: int64(len(line))}, nil
}

// Run is the run the trace's header names.
func (t *TraceFile) Run() string { return t.run }

// Committed reports whether a row of the trace is a commit intent (crw.commit's): known once
// a reading went through the whole trace.
func (t *TraceFile) Committed() bool { return t.committed }

// Each calls fn with up to limit rows from seq from on (limit 0: every one), in order, and
// stops at fn's first error: a replay.Source. fn must not keep the Row it is given.
func (t *TraceFile) Each(from uint64, limit int, fn func(*Row) error) error {
	from = max(from, 1)
	if !t.whole {
		return t.readAll(from, limit, fn)
	}
	if from > t.rows {
		return nil
	}
	end := t.rows
	if limit > 0 {
		end = min(end, from-1+uint64(limit))
	}
	rows := make([]Row, min(traceChunk, end-from+1))
	for first, n := from, uint64(0); first <= end; first += n {
		n = t.batch(first, min(end, first+uint64(len(rows))-1))
		if err := t.reread(first, rows[:n]); err != nil {
			return err
		}
		for i := range rows[:n] {
			if err := fn(&rows[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// batch is how many rows from seq first on, up to last, a reading again takes at once: those
// of the blocks whose lines make traceChunkBytes, the rows of first's block at least.
func (t *TraceFile) batch(first, last uint64) uint64 {
	b0 := (first - 1) / traceBlock
	b := b0 + 1 // the block after the last taken
	for b <= (last-1)/traceBlock && t.blocks[b+1]-t.blocks[b0] <= traceChunkBytes {
		b++
	}
	return min(last, b*traceBlock) - first + 1
}

// readAll is the first reading: every line, checked as Import checks it, each row from seq
// from on given to fn (up to limit of them) once its chunk is read.
func (t *TraceFile) readAll(from uint64, limit int, fn func(*Row) error) error {
	br := bufio.NewReader(io.NewSectionReader(t.r, t.start, math.MaxInt64-t.start))
	off := t.start
	texts := make([][]byte, 0, traceChunk)
	rows := make([]Row, traceChunk)
	errs := make([]error, traceChunk)
	given := 0
	var blocks []int64
	var sums []uint32
	var n uint64 // rows read
	for eof := false; !eof; {
		texts = texts[:0]
		for chunkBytes := 0; len(texts) < traceChunk && chunkBytes < traceChunkBytes; {
			line, err := br.ReadBytes('\n')
			if err != nil && err != io.EOF {
				return traceErr(fmt.Errorf("journal: import: line %d: %w", n+2, err))
			}
			if len(line) == 0 {
				eof = true
				break
			}
			if n%traceBlock == 0 {
				blocks, sums = append(blocks, off), append(sums, 0)
			}
			sums[len(sums)-1] = crc32.Update(sums[len(sums)-1], traceTable, line)
			off += int64(len(line))
			n++
			chunkBytes += len(line)
			texts = append(texts, trimLine(line))
			if err == io.EOF {
				eof = true
				break
			}
		}
		first := n - uint64(len(texts)) // rows before this chunk
		parallel(len(texts), func(i int) {
			rows[i] = Row{}
			errs[i] = decodeStrict(texts[i], &rows[i])
		})
		for i := range texts {
			seq := first + uint64(i) + 1
			if err := checkTraceRow(seq, &rows[i], errs[i], t.run); err != nil {
				return traceErr(err)
			}
			if rows[i].Type == TypeCommitIntent {
				t.committed = true
			}
			if seq < from || (limit > 0 && given == limit) {
				continue
			}
			given++
			if err := fn(&rows[i]); err != nil {
				return err
			}
		}
	}
	t.blocks, t.sums, t.rows, t.whole = append(blocks, off), sums, n, true
	return nil
}

// reread reads again the rows of seq first on into rows, from the blocks of lines the first
// reading noted.
func (t *TraceFile) reread(first uint64, rows []Row) error {
	last := first + uint64(len(rows)) - 1
	b0, b1 := (first-1)/traceBlock, (last-1)/traceBlock
	changed := func(from, to uint64) error {
		return traceErr(fmt.Errorf("journal: import: lines %d to %d: the trace changed while it was read", from+1, to+1))
	}
	buf := make([]byte, t.blocks[b1+1]-t.blocks[b0])
	if _, err := t.r.ReadAt(buf, t.blocks[b0]); errors.Is(err, io.EOF) {
		return changed(first, t.rows) // cut short
	} else if err != nil {
		return traceErr(fmt.Errorf("journal: import: lines %d to %d: %w", first+1, last+1, err))
	}
	texts := make([][]byte, 0, len(rows))
	for b := b0; b <= b1; b++ {
		block := buf[t.blocks[b]-t.blocks[b0] : t.blocks[b+1]-t.blocks[b0]]
		if crc32.Checksum(block, traceTable) != t.sums[b] {
			return changed(b*traceBlock+1, min((b+1)*traceBlock, t.rows))
		}
		for seq := b*traceBlock + 1; len(block) > 0; seq++ {
			line := block
			if i := bytes.IndexByte(block, '\n'); i >= 0 {
				line = block[:i+1]
			}
			block = block[len(line):]
			if seq >= first && seq <= last {
				texts = append(texts, trimLine(line))
			}
		}
	}
	if len(texts) != len(rows) {
		return changed(first, last)
	}
	errs := make([]error, len(rows))
	parallel(len(rows), func(i int) {
		rows[i] = Row{}
		errs[i] = decodeStrict(texts[i], &rows[i])
	})
	for i := range rows {
		if err := checkTraceRow(first+uint64(i), &rows[i], errs[i], t.run); err != nil {
			return traceErr(err)
		}
	}
	return nil
}

// trimLine is a line without its line break (\n or \r\n).
func trimLine(line []byte) []byte {
	return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
}

// readHeader checks a trace's header line and returns the run it names.
func readHeader(line []byte) (string, error) {
	var h traceHeader
	if err := decodeStrict(line, &h); err != nil {
		return "", fmt.Errorf("journal: import: line 1: header: %w", err)
	}
	if h.Format != TraceFormat {
		return "", fmt.Errorf("journal: import: line 1: format %q, want %q", h.Format, TraceFormat)
	}
	if h.Run == "" {
		return "", errors.New("journal: import: line 1: header has no run id")
	}
	return h.Run, nil
}

// checkTraceRow checks the row of seq a trace's line gave (decodeErr: the line's decoding
// failed), as Import does, naming its line.
func checkTraceRow(seq uint64, r *Row, decodeErr error, run string) error {
	line := seq + 1
	switch {
	case decodeErr != nil:
		return fmt.Errorf("journal: import: line %d: %w", line, decodeErr)
	case r.Seq != seq:
		return fmt.Errorf("journal: import: line %d: seq %d, want %d", line, r.Seq, seq)
	case !IsKnownType(r.Type):
		// A replay would pass over a row it does not know and report a run that never was.
		return fmt.Errorf("journal: import: line %d: unknown row type %q", line, r.Type)
	case r.Type == TypeStarted && r.Run != "" && r.Run != run:
		return fmt.Errorf("journal: import: line %d: run %q, but the header says %q", line, r.Run, run)
	}
	return nil
}
