package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/crw-dev/crw/errs"
)

// LogError writes the full account of an error that has a diagnostic to l, on a line that
// carries the diagnostic's correlation id, and names l in the diagnostic: the user sees the
// bounded error, the log keeps what caused it.
func LogError(l Log, e *errs.Error) {
	if e == nil || e.Diagnostic == nil {
		return
	}
	entry := struct {
		At            time.Time `json:"at"`
		CorrelationID string    `json:"correlationId"`
		Code          errs.Code `json:"code"`
		Phase         string    `json:"phase,omitempty"`
		Reason        string    `json:"reason,omitempty"`
		Detail        string    `json:"detail,omitempty"`
		Cause         string    `json:"cause,omitempty"`
	}{time.Now().UTC(), e.Diagnostic.CorrelationID, e.Code, e.Diagnostic.Phase, e.Diagnostic.Reason, e.Detail, ""}
	if c := e.Cause(); c != nil {
		entry.Cause = c.Error()
	}
	line, err := json.Marshal(entry)
	if err != nil {
		return
	}
	if l.Append(line) == nil {
		e.Diagnostic.Log = l.Name()
	}
}

// WholeLines reads whole lines from offset on of size bytes, at most about max bytes (a line
// longer than max is returned whole, up to MaxLogLine), and the offset after them. Nothing
// past offset costs nothing: a follower's look at a log that has not grown reads nothing.
func WholeLines(r io.ReaderAt, size, offset int64, max int) ([]byte, int64, error) {
	if max <= 0 || max > MaxLogRead {
		max = MaxLogRead
	}
	if offset >= size {
		return nil, offset, nil
	}
	buf := make([]byte, min(int64(max+MaxLogLine), size-offset))
	n, err := r.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, offset, err
	}
	buf = buf[:n]
	end := bytes.LastIndexByte(buf[:min(len(buf), max)], '\n')
	if end < 0 {
		end = bytes.IndexByte(buf, '\n')
	}
	if end < 0 {
		if len(buf) >= MaxLogLine {
			// A line past the bound (written by something else): skipped, not read for ever.
			return nil, offset + int64(len(buf)), nil
		}
		return nil, offset, nil
	}
	return buf[:end+1], offset + int64(end+1), nil
}

// Bounds of a log read: what one read returns, and the longest line it returns whole.
const (
	MaxLogRead = 1 << 20
	MaxLogLine = 256 << 10
)

// Console is a line a workflow wrote (console.*, crw.log), as a run's log keeps it.
type Console struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"` // "console"
	Level   string    `json:"level"`
	Message string    `json:"message"`
}

// LogConsole appends a workflow's line to its run's log. Failing, the line is let go: the run
// goes on.
func LogConsole(l Log, level, message string) {
	if l == nil {
		return
	}
	_ = l.Append(ConsoleLine(level, message))
}

// ConsoleLine is a workflow's line as a run's log keeps it (a message over half a log line's
// bound is cut).
func ConsoleLine(level, message string) []byte {
	if len(message) > MaxLogLine/2 {
		message = strings.ToValidUTF8(message[:MaxLogLine/2], "") + "…"
	}
	line, _ := json.Marshal(Console{At: time.Now().UTC(), Kind: "console", Level: level, Message: message})
	return line
}

// Dropped is the line a run's log gets where it reached its bound (Lines 0), and the one that
// says how many of the workflow's lines were dropped since, at the end of each process that
// dropped some. These two lines are written past the bound.
type Dropped struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"` // "dropped"
	Lines   int64     `json:"lines"`
	Bytes   int64     `json:"bytes"`
	Since   time.Time `json:"since"`
	Message string    `json:"message"`
}
