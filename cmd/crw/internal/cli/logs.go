package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/internal/termtext"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

func newCmdLogs(g *globals, streams IO) *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs RUN",
		Short: "Print a run's log: its workflow's console and crw.log lines, and the full account of its errors",
		Long: `Print the run's log (crw.log in its folder): each line its workflow wrote with console.* or
crw.log, and each error's full account with its correlationId, oldest first. -f goes on
printing what is added until the run ends. --json prints the lines as the log keeps them, one
JSON object a line (JSON Lines).`,
		Example: `  crw flow logs last
  crw flow logs RUN -f
  crw flow logs RUN --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.runID = args[0]
			svc, err := g.service()
			if err != nil {
				return err
			}
			if _, err := svc.Status(cmd.Context(), args[0]); err != nil {
				return err
			}
			l := svc.Store.Log(args[0])
			var off int64
			for {
				off, err = tailLog(l, off, func(line []byte) { writeLogLine(streams.Out, line, g.json) })
				if err != nil {
					return err
				}
				if !follow {
					return nil
				}
				st, err := svc.Status(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if st.State != store.StateRunning {
					_, err = tailLog(l, off, func(line []byte) { writeLogLine(streams.Out, line, g.json) })
					return err
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(300 * time.Millisecond):
				}
			}
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "go on printing what is added until the run ends")
	return cmd
}

// tailLog hands each whole line of the log from offset on to each, and returns the offset
// after them.
func tailLog(l store.Log, offset int64, each func([]byte)) (int64, error) {
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

// logLine is what a run's log line may say: a workflow's line, or an error's account.
type logLine struct {
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

// writeLogLine prints a log line: as it is with asJSON, else for a reader.
func writeLogLine(w io.Writer, raw []byte, asJSON bool) {
	var l logLine
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
	line := fmt.Sprintf("%s error %s", at, l.Code)
	if l.Reason != "" {
		line += " (" + l.Reason + ")"
	}
	line += ": " + l.Detail
	if l.Cause != "" {
		line += ": " + l.Cause
	}
	fmt.Fprintf(w, "%s [%s]\n", line, l.CorrelationID)
}

// consoleLines prints the workflow's lines a run's log gains (follow), from offset on, and
// returns the offset after them.
func consoleLines(w io.Writer, l store.Log, offset int64) int64 {
	next, _ := tailLog(l, offset, func(raw []byte) {
		var line logLine
		switch {
		case json.Unmarshal(raw, &line) != nil:
		case line.Kind == "console":
			fmt.Fprintf(w, "%s: %s\n", termtext.Safe(line.Level, ""), termtext.Safe(line.Message, "    "))
		case line.Kind == "dropped":
			fmt.Fprintf(w, "crw: %s\n", termtext.Safe(line.Message, "    "))
		}
	})
	return next
}
