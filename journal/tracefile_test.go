package journal_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
)

// traceRows reads the trace data through a TraceFile: its rows, or its first error.
func traceRows(data []byte) ([]journal.Row, error) {
	tf, err := journal.OpenTrace(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var rows []journal.Row
	err = tf.Each(1, 0, func(r *journal.Row) error {
		rows = append(rows, *r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// TestTraceFileReadsWhatImportReads: every trace Import reads or refuses, a TraceFile reads to
// the same rows or refuses with the same words.
func TestTraceFileReadsWhatImportReads(t *testing.T) {
	t.Parallel()
	for _, tt := range importCases {
		rows, err := traceRows([]byte(tt.in))
		if tt.wantErr != "" {
			require.ErrorContains(t, err, tt.wantErr, tt.name)
			_, importErr := journal.Import(strings.NewReader(tt.in))
			assert.Equal(t, importErr.Error(), err.Error(), tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		want, err := journal.Import(strings.NewReader(tt.in))
		require.NoError(t, err)
		assert.Equal(t, want, rows, tt.name)
	}
}

// longTrace is a trace of n warning rows after a started row, each saying its seq, and a commit
// intent among them when committed; written to a file of dir.
func longTrace(t *testing.T, dir string, n int, committed bool) (string, []journal.Row) {
	t.Helper()
	at := time.Date(2026, 12, 8, 1, 0, 0, 0, time.UTC)
	rows := []journal.Row{{Seq: 1, Type: journal.TypeStarted, At: at, Run: "r1"}}
	for i := 2; i <= n; i++ {
		r := journal.Row{Seq: uint64(i), Type: journal.TypeWarning, At: at.Add(time.Duration(i) * time.Millisecond),
			Detail: fmt.Sprintf("row %d: <é> \"%s\"", i, strings.Repeat("x", i%37))}
		if committed && i == n/2 {
			r = journal.Row{Seq: uint64(i), Type: journal.TypeCommitIntent, At: at, Node: "n", Ref: "refs/crw/r1/n", Message: "m"}
		}
		rows = append(rows, r)
	}
	var buf bytes.Buffer
	require.NoError(t, journal.Export(&buf, "r1", rows))
	path := filepath.Join(dir, "trace.jsonl")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
	// The rows as a trace gives them back (Export writes them without HTML escapes).
	back, err := journal.Import(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	return path, back
}

// TestTraceFileReadsItsRowsAgain: once read through, a TraceFile gives any run of its rows
// again from their lines, as the first reading gave them; a reading that starts past its end
// gives none.
func TestTraceFileReadsItsRowsAgain(t *testing.T) {
	t.Parallel()
	const n = 2000 // several chunks of lines
	path, want := longTrace(t, t.TempDir(), n, true)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tf, err := journal.OpenTrace(f)
	require.NoError(t, err)
	assert.Equal(t, "r1", tf.Run())

	// The first reading, from a seq on and stopped at a limit, still reads the whole trace.
	var got []journal.Row
	require.NoError(t, tf.Each(700, 3, func(r *journal.Row) error {
		got = append(got, *r)
		return nil
	}))
	assert.Equal(t, want[699:702], got)
	assert.True(t, tf.Committed(), "its commit intent was seen")

	for _, c := range []struct {
		from  uint64
		limit int
	}{{1, 0}, {1, 1}, {511, 3}, {512, 1}, {513, 600}, {1999, 5}, {2000, 0}, {2001, 1}, {5000, 0}} {
		got = nil
		require.NoError(t, tf.Each(c.from, c.limit, func(r *journal.Row) error {
			got = append(got, *r)
			return nil
		}))
		end := uint64(n)
		if c.limit > 0 {
			end = min(end, c.from-1+uint64(c.limit))
		}
		var expect []journal.Row
		if c.from <= end {
			expect = want[c.from-1 : end]
		}
		assert.Equal(t, expect, got, "from %d, limit %d", c.from, c.limit)
	}

	other, _ := longTrace(t, t.TempDir(), 10, false)
	g, err := os.Open(other)
	require.NoError(t, err)
	defer g.Close()
	plain, err := journal.OpenTrace(g)
	require.NoError(t, err)
	require.NoError(t, plain.Each(1, 0, func(*journal.Row) error { return nil }))
	assert.False(t, plain.Committed())
}

// TestATraceOfLongLinesIsReadAFewAtATime: lines of 100 KB, more of them than a reading takes at
// once (traceChunkBytes), are read through and again in parts, each row as Import reads it.
func TestATraceOfLongLinesIsReadAFewAtATime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 8, 1, 0, 0, 0, time.UTC)
	rows := []journal.Row{{Seq: 1, Type: journal.TypeStarted, At: at, Run: "r1"}}
	for i := 2; i <= 200; i++ {
		rows = append(rows, journal.Row{Seq: uint64(i), Type: journal.TypeWarning, At: at, Detail: fmt.Sprintf("%d %s", i, strings.Repeat("y", 100<<10))})
	}
	var buf bytes.Buffer
	require.NoError(t, journal.Export(&buf, "r1", rows))
	want, err := journal.Import(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	tf, err := journal.OpenTrace(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	for _, c := range []struct {
		from  uint64
		limit int
	}{{1, 0}, {1, 0}, {2, 150}, {60, 70}, {64, 2}, {129, 0}} {
		var got []journal.Row
		require.NoError(t, tf.Each(c.from, c.limit, func(r *journal.Row) error {
			got = append(got, *r)
			return nil
		}))
		end := uint64(len(want))
		if c.limit > 0 {
			end = c.from - 1 + uint64(c.limit)
		}
		require.Equal(t, len(want[c.from-1:end]), len(got), "from %d, limit %d", c.from, c.limit)
		for i := range got {
			require.Equal(t, want[int(c.from)-1+i], got[i], "from %d, limit %d, row %d", c.from, c.limit, i)
		}
	}
}

// TestATraceChangedWhileReadIsRefused: a line that changed after the first reading is refused
// when it is read again, naming the lines of its block, rather than read as another row; the
// blocks around it read as they did.
func TestATraceChangedWhileReadIsRefused(t *testing.T) {
	t.Parallel()
	path, want := longTrace(t, t.TempDir(), 200, false)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tf, err := journal.OpenTrace(f)
	require.NoError(t, err)
	require.NoError(t, tf.Each(1, 0, func(*journal.Row) error { return nil }))

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := bytes.SplitAfter(data, []byte("\n"))
	at := bytes.Index(lines[150], []byte("row 150")) // seq 150, line 151, in the block of seqs 129 to 192
	require.Positive(t, at)
	lines[150][at+6] = '1' // "row 151": the same length, another row
	require.NoError(t, os.WriteFile(path, bytes.Join(lines, nil), 0o600))

	var got []journal.Row
	keep := func(r *journal.Row) error {
		got = append(got, *r)
		return nil
	}
	require.NoError(t, tf.Each(1, 128, keep), "the blocks before it are as they were")
	require.NoError(t, tf.Each(193, 0, keep), "and those after it")
	assert.Equal(t, append(slices.Clone(want[:128]), want[192:]...), got)
	err = tf.Each(140, 20, keep)
	require.Error(t, err)
	assert.Equal(t, "journal: import: lines 130 to 193: the trace changed while it was read", err.Error())

	// A trace cut short is another trace too.
	require.NoError(t, os.WriteFile(path, data[:len(data)-10], 0o600))
	assert.ErrorContains(t, tf.Each(190, 0, keep), "the trace changed while it was read")
}

// FuzzTraceFile: whatever the trace, a TraceFile reads the rows Import reads, or says what
// Import says.
func FuzzTraceFile(f *testing.F) {
	for _, tt := range importCases {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := journal.Import(bytes.NewReader(data))
		got, err := traceRows(data)
		if wantErr != nil {
			if err == nil || err.Error() != wantErr.Error() {
				t.Fatalf("Import says %v, the TraceFile %v", wantErr, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Import reads the trace, the TraceFile says %v", err)
		}
		if len(want) == 0 {
			want = nil
		}
		if !assert.ObjectsAreEqual(want, got) {
			t.Fatalf("Import reads\n%+v\nthe TraceFile\n%+v", want, got)
		}
	})
}
