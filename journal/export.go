package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	// Prompts and outputs stay readable and diffable in golden files.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(traceHeader{Format: TraceFormat, Run: runID}); err != nil {
		return fmt.Errorf("journal: export header: %w", err)
	}
	for i := range rows {
		if want := uint64(i) + 1; rows[i].Seq != want {
			return fmt.Errorf("journal: export: row %d has seq %d, want %d", i+1, rows[i].Seq, want)
		}
		if err := enc.Encode(&rows[i]); err != nil {
			return fmt.Errorf("journal: export row %d: %w", rows[i].Seq, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("journal: export: %w", err)
	}
	return nil
}

// Import reads a trace written by Export. Every error names its line. Lines
// are decoded strictly (no unknown fields, nothing after the object), since
// traces are also written by hand as test fixtures and a misspelt field
// should fail rather than vanish.
func Import(r io.Reader) ([]Row, error) {
	br := bufio.NewReader(r)
	var (
		rows []Row
		run  string
		n    int
	)
	for {
		line, readErr := br.ReadBytes('\n')
		if readErr != nil && readErr != io.EOF {
			return nil, fmt.Errorf("journal: import: line %d: %w", n+1, readErr)
		}
		if len(line) == 0 && readErr == io.EOF {
			break
		}
		n++
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if n == 1 {
			var h traceHeader
			if err := decodeStrict(line, &h); err != nil {
				return nil, fmt.Errorf("journal: import: line 1: header: %w", err)
			}
			if h.Format != TraceFormat {
				return nil, fmt.Errorf("journal: import: line 1: format %q, want %q", h.Format, TraceFormat)
			}
			if h.Run == "" {
				return nil, errors.New("journal: import: line 1: header has no run id")
			}
			run = h.Run
		} else {
			var row Row
			if err := decodeStrict(line, &row); err != nil {
				return nil, fmt.Errorf("journal: import: line %d: %w", n, err)
			}
			if want := uint64(len(rows)) + 1; row.Seq != want {
				return nil, fmt.Errorf("journal: import: line %d: seq %d, want %d", n, row.Seq, want)
			}
			if row.Type == TypeStarted && row.Run != "" && row.Run != run {
				return nil, fmt.Errorf("journal: import: line %d: run %q, but the header says %q", n, row.Run, run)
			}
			rows = append(rows, row)
		}
		if readErr == io.EOF {
			break
		}
	}
	if n == 0 {
		return nil, errors.New("journal: import: line 1: missing header")
	}
	return rows, nil
}

// decodeStrict decodes one JSON value that must fill the whole line.
func decodeStrict(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		switch {
		case err == io.EOF:
			return errors.New("empty line")
		case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("invalid JSON: %w", err)
		}
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("invalid JSON: more after the object")
	}
	return nil
}
