package journalfile_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local/journalfile"
	"github.com/crw-dev/crw/store/local/journalfile/journalfiletest"
)

// benchRow is a terminal row of a typical size.
var benchRow = journal.Row{
	Type:   journal.TypeCompleted,
	Call:   "c42",
	Output: json.RawMessage(`{"summary":"the plan has three steps and each names its files","steps":["read","edit","test"]}`),
	Tokens: &journal.Tokens{Input: 1200, CachedInput: 800, Output: 300, Total: 1500},
}

// reportCommits adds commits per row and rows per commit to the results.
func reportCommits(b *testing.B, j *journalfile.Journal) {
	commits := float64(journalfile.CommitCount(j))
	rows := float64(j.LastSeq())
	b.ReportMetric(commits/rows, "commits/op")
	b.ReportMetric(rows/commits, "rows/commit")
}

// BenchmarkWriteSequential is the engine's common case: one row, then wait
// for it to be durable. Each op is one commit, and so its fsyncs.
func BenchmarkWriteSequential(b *testing.B) {
	j, _ := journalfiletest.Create(b)
	b.ReportAllocs()
	for b.Loop() {
		r := benchRow
		if _, err := j.Write(&r); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportCommits(b, j)
}

// BenchmarkWriteConcurrent16 has 16 goroutines each writing one row at a
// time; group commit shares commits among them. ns/op is wall time per row.
func BenchmarkWriteConcurrent16(b *testing.B) {
	const writers = 16
	j, _ := journalfiletest.Create(b)
	b.ReportAllocs()
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ResetTimer()
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				r := benchRow
				if _, err := j.Write(&r); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	reportCommits(b, j)
}

// BenchmarkAppend is an append's work before its commit: the row encoded, its checksum
// appended, buffered. Rows are dropped every 4096 appends so the buffer stays small.
func BenchmarkAppend(b *testing.B) {
	j, _ := journalfiletest.Create(b)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		r := benchRow
		j.Append(&r)
		if n++; n%4096 == 0 {
			b.StopTimer()
			if err := j.Sync(j.LastSeq()); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
}

// BenchmarkWriteCallSequential is a sequential call's two commits: its prepared row, then its
// terminal row, each waited for, every call a new one. Each commit also folds its row into the
// summary and writes the call's state.
func BenchmarkWriteCallSequential(b *testing.B) {
	j, _ := journalfiletest.Create(b)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		call := "c" + strconv.Itoa(n)
		if _, err := j.Write(&journal.Row{Type: journal.TypePrepared, Call: call, Index: n, Role: "executor", Node: "step", Prompt: "Carry out step " + call}); err != nil {
			b.Fatal(err)
		}
		r := benchRow
		r.Call = call
		if _, err := j.Write(&r); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportCommits(b, j)
}

// BenchmarkOpenToWrite is what a resume pays before it reads a row: the check of the whole
// file (its walk of every key, then bbolt's consistency check beside the walk of the rows) and
// the open to write, of a journal of calls calls (4 rows each, written as a run writes them,
// two commits a call) that its writer closed. Each op opens a fresh copy of the file, whose
// pages the page cache holds.
func BenchmarkOpenToWrite(b *testing.B) {
	for _, calls := range []int{1000, 10000} {
		b.Run("calls="+strconv.Itoa(calls), func(b *testing.B) {
			j, path := journalfiletest.Create(b)
			for i := range calls {
				call := "c" + strconv.Itoa(i+1)
				done := benchRow
				done.Call = call
				if _, err := j.Write(&journal.Row{Type: journal.TypePrepared, Call: call, Index: i + 1, Role: "reviewer", Node: "step",
					Prompt: "Review step " + call, PromptDigest: journal.Digest(call), SchemaDigest: journal.Digest("schema"),
					InputDigest: journal.Digest("input" + call)},
					&journal.Row{Type: journal.TypeThreadStarted, Call: call, ThreadID: "fake-" + call, Model: "fake-model", Effort: "medium"}); err != nil {
					b.Fatal(err)
				}
				if _, err := j.Write(&journal.Row{Type: journal.TypeTurnStarted, Call: call, K: 1, TurnID: "fake-" + call + "-t1"}, &done); err != nil {
					b.Fatal(err)
				}
			}
			if err := j.Sync(j.LastSeq()); err != nil {
				b.Fatal(err)
			}
			if err := j.Close(); err != nil {
				b.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			fresh := filepath.Join(b.TempDir(), "journal.db")
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				b.StopTimer()
				if err := os.WriteFile(fresh, data, 0o600); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				w, err := journalfile.Open(fresh)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
