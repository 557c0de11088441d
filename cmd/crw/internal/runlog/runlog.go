// Package runlog reads a run's log (crw.log in its folder) for the commands that print it: its
// whole lines from an offset on, each printed for a reader or as the log keeps it.
package runlog

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/crw-dev/crw/internal/termtext"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Tail hands each whole line of the log from offset on to each, and returns the offset after
// them.
func Tail(l store.Log, offset int64, each func([]byte)) (int64, error) {
	for {
		data, next, err := l.Read(offset, store.MaxLogRead)
		if err != nil {
			return offset, err
		}
		for _, line := range strings.SplitAfter(string(data), "\n") {
			if line = strings.TrimRight(line, "\n"); line != "" {
				each([]byte(line))
			}
		}
		if next == offset {
			return offset, nil
		}
		offset = next
	}
}

// line is what a run's log line may say: a workflow's line, or an error's account.
type line struct {
	At            time.Time `json:"at"`
	Kind          string    `json:"kind"`
	Level         string    `json:"level"`
	Message       string    `json:"message"`
	CorrelationID string    `json:"correlationId"`
	Code          string    `json:"code"`
	Phase         string    `json:"phase"`
	Reason        string    `json:"reason"`
	Detail        string    `json:"detail"`
	Cause         string    `json:"cause"`
}

// WriteLine prints a log line: as it is with asJSON, else for a reader.
func WriteLine(w io.Writer, raw []byte, asJSON bool) {
	var l line
	if err := json.Unmarshal(raw, &l); err != nil {
		if asJSON {
			return // not a line crw wrote: JSON Lines holds only objects
		}
		fmt.Fprintf(w, "%s\n", termtext.Safe(string(raw), "    "))
		return
	}
	if asJSON {
		fmt.Fprintf(w, "%s\n", journal.UnescapeHTML(raw))
		return
	}
	at := l.At.Local().Format("15:04:05")
	// A workflow's line (or an error's cause quoting a model's text) reaches a terminal: what
	// could restyle it or pass for crw's own line is escaped.
	switch l.Kind {
	case "console":
		fmt.Fprintf(w, "%s %s: %s\n", at, termtext.Safe(l.Level, ""), termtext.Safe(l.Message, "    "))
		return
	case "dropped":
		fmt.Fprintf(w, "%s crw: %s\n", at, termtext.Safe(l.Message, "    "))
		return
	}
	l.Detail, l.Cause = termtext.Safe(l.Detail, "    "), termtext.Safe(l.Cause, "    ")
	text := fmt.Sprintf("%s error %s", at, l.Code)
	if l.Reason != "" {
		text += " (" + l.Reason + ")"
	}
	text += ": " + l.Detail
	if l.Cause != "" {
		text += ": " + l.Cause
	}
	fmt.Fprintf(w, "%s [%s]\n", text, l.CorrelationID)
}

// ConsoleLines gives the workflow's lines a run's log gains (follow), from offset on, each
// with when it was written and as a terminal shows it, and returns the offset after them.
func ConsoleLines(l store.Log, offset int64, each func(at time.Time, text string)) int64 {
	next, _ := Tail(l, offset, func(raw []byte) {
		var line line
		switch {
		case json.Unmarshal(raw, &line) != nil:
		case line.Kind == "console":
			each(line.At, fmt.Sprintf("%s: %s\n", termtext.Safe(line.Level, ""), termtext.Safe(line.Message, "    ")))
		case line.Kind == "dropped":
			each(line.At, fmt.Sprintf("crw: %s\n", termtext.Safe(line.Message, "    ")))
		}
	})
	return next
}
