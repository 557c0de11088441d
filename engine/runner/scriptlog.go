package runner

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/crw-dev/crw/store"
)

// scriptLog takes the script's console and crw.log lines to the console and the run's log
// until the next line would pass the log's bound (store.Limits.Log): a runaway workflow must
// not fill the disk every run shares. From there every line of this process is dropped and
// counted: the log gets one line where
// it reached the bound and, when the process ends, one saying how many were dropped (both
// written past the bound), and the console the same.
type scriptLog struct {
	mu      sync.Mutex
	console io.Writer
	log     store.Log // nil: nowhere
	max     int64
	used    int64 // the log's size, as this process knows it

	dropped, droppedBytes int64
	since                 time.Time // the first line dropped
}

func newScriptLog(console io.Writer, log store.Log, max int64) *scriptLog {
	s := &scriptLog{console: console, log: log, max: max}
	if log != nil {
		s.used, _ = log.Size()
	}
	return s
}

// write takes one line; toLog is false once the process has stopped (it writes nothing of the
// run's any more).
func (s *scriptLog) write(level, message string, toLog bool) {
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

// close says how many lines this process dropped, if any.
func (s *scriptLog) close(toLog bool) {
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

func (s *scriptLog) append(d store.Dropped) {
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
