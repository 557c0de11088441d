package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	fastjson "github.com/goccy/go-json"
)

// TraceFormat names the trace format in a trace's header line.
const TraceFormat = "crw-trace/1"

// traceHeader is a trace's first line.
type traceHeader struct {
	Format string `json:"format"`
	Run    string `json:"run"`
}

// Export writes rows as a trace: JSON Lines, a header naming the format and
// run first, then one row per line. Rows must be seq 1, 2, … as a journal
// holds them, so that Import takes back what Export writes.
func Export(w io.Writer, runID string, rows []Row) error {
	tw, err := NewTraceWriter(w, runID)
	if err != nil {
		return err
	}
	for i := range rows {
		if err := tw.Row(&rows[i]); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// TraceWriter writes a trace a row at a time, as Export does: a reader that streams a journal
// keeps none of its rows.
type TraceWriter struct {
	bw   *bufio.Writer
	enc  *json.Encoder
	rows uint64
}

// NewTraceWriter writes a trace's header to w and returns the writer of its rows.
func NewTraceWriter(w io.Writer, runID string) (*TraceWriter, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(unescaping{bw})
	// Prompts and outputs stay readable and diffable in golden files, also where the journal
	// kept them escaped.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(traceHeader{Format: TraceFormat, Run: runID}); err != nil {
		return nil, fmt.Errorf("journal: export header: %w", err)
	}
	return &TraceWriter{bw: bw, enc: enc}, nil
}

// Row writes the next row, which must have the next seq (1 first).
func (t *TraceWriter) Row(r *Row) error {
	if want := t.rows + 1; r.Seq != want {
		return fmt.Errorf("journal: export: row %d has seq %d, want %d", want, r.Seq, want)
	}
	if err := t.enc.Encode(r); err != nil {
		return fmt.Errorf("journal: export row %d: %w", r.Seq, err)
	}
	t.rows++
	return nil
}

// Rows is how many rows were written.
func (t *TraceWriter) Rows() uint64 { return t.rows }

// Flush writes what is buffered.
func (t *TraceWriter) Flush() error {
	if err := t.bw.Flush(); err != nil {
		return fmt.Errorf("journal: export: %w", err)
	}
	return nil
}

// Import reads a trace written by Export. Every error names its line. Every row must be of a
// known type. Lines
// are decoded strictly (no unknown fields, nothing after the object), since
// traces are also written by hand as test fixtures and a misspelt field
// should fail rather than vanish.
func Import(r io.Reader) ([]Row, error) {
	br := bufio.NewReader(r)
	var lines [][]byte
	for {
		line, readErr := br.ReadBytes('\n')
		if readErr != nil && readErr != io.EOF {
			return nil, fmt.Errorf("journal: import: line %d: %w", len(lines)+1, readErr)
		}
		if len(line) == 0 && readErr == io.EOF {
			break
		}
		lines = append(lines, trimLine(line))
		if readErr == io.EOF {
			break
		}
	}
	if len(lines) == 0 {
		return nil, errors.New("journal: import: line 1: missing header")
	}
	run, err := readHeader(lines[0])
	if err != nil {
		return nil, err
	}

	// Rows are decoded on every core; the checks that follow name the first bad line.
	rows := make([]Row, len(lines)-1)
	errs := make([]error, len(rows))
	parallel(len(rows), func(i int) {
		errs[i] = decodeStrict(lines[i+1], &rows[i])
	})
	for i := range rows {
		if err := checkTraceRow(uint64(i)+1, &rows[i], errs[i], run); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// decodeStrict decodes one JSON value that must fill the whole line.
func decodeStrict(line []byte, v any) error {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return errors.New("empty line")
	}
	dec := fastjson.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.InputOffset() == int64(len(trimmed)) {
		return nil
	}
	// The standard decoder says where and why, in the words the tests and users know.
	std := json.NewDecoder(bytes.NewReader(trimmed))
	std.DisallowUnknownFields()
	if serr := std.Decode(v); serr != nil {
		var syn *json.SyntaxError
		if errors.As(serr, &syn) || errors.Is(serr, io.ErrUnexpectedEOF) {
			return fmt.Errorf("invalid JSON: %w", serr)
		}
		return serr
	}
	if err != nil {
		return err
	}
	return errors.New("invalid JSON: more after the object")
}

// unescaping writes JSON text with UnescapeHTML applied: each Encode is one Write.
type unescaping struct{ w io.Writer }

func (u unescaping) Write(b []byte) (int, error) {
	if _, err := u.w.Write(UnescapeHTML(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}
