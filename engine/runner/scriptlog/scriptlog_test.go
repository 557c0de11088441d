package scriptlog_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/runner/scriptlog"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// kinds lists the log's lines as kind:message (console) or kind:lines (dropped).
func kinds(t *testing.T, l store.Log) []string {
	t.Helper()
	data, _, err := l.Read(0, 1<<20)
	require.NoError(t, err)
	var out []string
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var d store.Dropped
		require.NoError(t, json.Unmarshal(line, &d))
		if d.Kind == "dropped" {
			out = append(out, "dropped:"+strings.Repeat("#", int(d.Lines)))
			continue
		}
		var c store.Console
		require.NoError(t, json.Unmarshal(line, &c))
		out = append(out, c.Kind+":"+c.Message)
	}
	return out
}

func TestLinesPastTheBoundAreCountedNotKept(t *testing.T) {
	runLog := mem.New().Log("20261205-010000-a1b2c3")
	line := len(store.ConsoleLine("log", "one")) + 1
	var console bytes.Buffer
	l := scriptlog.New(&console, runLog, int64(2*line+line/2)) // room for two lines
	l.Write("log", "one", true)
	l.Write("warn", "two", true)
	l.Write("log", "three", true)
	l.Write("log", "four", true)
	l.Close(true)
	assert.Equal(t, []string{"console:one", "console:two", "dropped:", "dropped:##"}, kinds(t, runLog))
	out := console.String()
	assert.True(t, strings.HasPrefix(out, "one\nwarn: two\ncrw: the run's log reached its bound"), out)
	assert.Contains(t, out, "crw: 2 of the workflow's lines (9 bytes) were dropped since")
}

func TestAStoppedProcessWritesNothingToTheRunsLog(t *testing.T) {
	runLog := mem.New().Log("20261205-010000-a1b2c3")
	var console bytes.Buffer
	l := scriptlog.New(&console, runLog, 1<<20)
	l.Write("log", "kept", true)
	l.Write("log", "console only", false)
	assert.Equal(t, []string{"console:kept"}, kinds(t, runLog))
	assert.Equal(t, "kept\nconsole only\n", console.String())
}

func TestConsoleLinesCannotRestyleTheTerminal(t *testing.T) {
	var w bytes.Buffer
	scriptlog.WriteConsole(&w, "error", "red\x1b[31m\nsecond")
	assert.NotContains(t, w.String(), "\x1b")
	assert.True(t, strings.HasPrefix(w.String(), "error: red"), w.String())
	w.Reset()
	scriptlog.WriteConsole(&w, "log", "done\ncrw: run completed")
	assert.Equal(t, "done\n    crw: run completed\n", w.String(), "no line passes for crw's own")
}
