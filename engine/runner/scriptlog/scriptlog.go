// Package scriptlog takes a workflow's console and crw.log lines to the console and the run's
// log, within the log's bound.
package scriptlog

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/crw-dev/crw/internal/termtext"
	"github.com/crw-dev/crw/store"
)

// Log takes the script's console and crw.log lines to the console and the run's log
// until the next line would pass the log's bound (store.Limits.Log): a runaway workflow must
// not fill the disk every run shares. From there every line of this process is dropped and
// counted: the log gets one line where
// it reached the bound and, when the process ends, one saying how many were dropped (both
// written past the bound), and the console the same.
type Log struct {
	mu      sync.Mutex
	console io.Writer
	log     store.Log // nil: nowhere
	max     int64
	used    int64 // the log's size, as this process knows it

	dropped, droppedBytes int64
	since                 time.Time // the first line dropped
}

// New returns the Log of a run's process: console gets every line, log (nil: none) those
// within max bytes.
func New(console io.Writer, log store.Log, max int64) *Log {
	s := &Log{console: console, log: log, max: max}
	if log != nil {
		s.used, _ = log.Size()
	}
	return s
}

// Write takes one line; toLog is false once the process has stopped (it writes nothing of the
// run's any more).
func (s *Log) Write(level, message string, toLog bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped > 0 {
		// Past the bound: a runaway loop's lines cost a count, not a JSON line each.
		s.dropped++
		s.droppedBytes += int64(len(message))
		return
	}
	line := store.ConsoleLine(level, message)
	if s.used+int64(len(line))+1 > s.max {
		if s.dropped == 0 {
			s.since = time.Now().UTC()
			text := fmt.Sprintf("the run's log reached its bound of %s (--max-log): the workflow's lines are dropped from here on", sizeText(s.max))
			fmt.Fprintf(s.console, "crw: %s\n", text)
			if toLog {
				s.append(store.Dropped{At: s.since, Kind: "dropped", Since: s.since, Message: text})
			}
		}
		s.dropped++
		s.droppedBytes += int64(len(message))
		return
	}
	WriteConsole(s.console, level, message)
	if toLog && s.log != nil && s.log.Append(line) == nil {
		s.used += int64(len(line)) + 1
	}
}

// Close says how many lines this process dropped, if any.
func (s *Log) Close(toLog bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped == 0 {
		return
	}
	text := fmt.Sprintf("%d of the workflow's lines (%s) were dropped since %s: the run's log holds its bound of %s (--max-log)",
		s.dropped, sizeText(s.droppedBytes), s.since.Format(time.RFC3339), sizeText(s.max))
	fmt.Fprintf(s.console, "crw: %s\n", text)
	if toLog {
		s.append(store.Dropped{At: time.Now().UTC(), Kind: "dropped", Lines: s.dropped, Bytes: s.droppedBytes, Since: s.since, Message: text})
	}
	s.dropped, s.droppedBytes = 0, 0
}

func (s *Log) append(d store.Dropped) {
	if s.log == nil {
		return
	}
	if line, err := json.Marshal(d); err == nil && s.log.Append(line) == nil {
		s.used += int64(len(line)) + 1
	}
}

// sizeText is a byte count for a reader: 64 MiB, 1.5 KiB, 12 bytes.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// RunLog is the run's log the lines go to; nil for none.
func (s *Log) RunLog() store.Log { return s.log }

// WriteConsole writes a line of a script's console: log and info lines as they are, the others
// after their level.
func WriteConsole(w io.Writer, level, message string) {
	// Escape sequences and line breaks a workflow prints cannot restyle the terminal or
	// pass for crw's own lines.
	message = termtext.Safe(message, "    ")
	if level == "log" || level == "info" {
		fmt.Fprintln(w, message)
		return
	}
	fmt.Fprintf(w, "%s: %s\n", level, message)
}
