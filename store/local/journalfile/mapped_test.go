package journalfile_test

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local/journalfile"
	"github.com/crw-dev/crw/store/local/journalfile/journalfiletest"
)

// mappedRSS is how much of the file at path this process has resident through its mappings,
// from /proc/self/smaps.
func mappedRSS(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps")
	}
	defer f.Close()
	total, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = strings.HasSuffix(line, " "+path)
			continue
		}
		if in && len(fields) == 3 && fields[0] == "Rss:" {
			kb, err := strconv.Atoi(fields[1])
			require.NoError(t, err)
			total += kb << 10
		}
	}
	require.NoError(t, sc.Err())
	return total
}

// TestMappedPagesAreReleased: a long run's commits read the page they append to through
// bbolt's mapping, which would keep the whole file resident in the process (a 100,000-call
// run's 117 MB journal, most of its RSS). The committer releases them as the file grows: 1,600
// calls' commits leave 1.3-1.5 MiB of the file resident without the releases, 0.45-0.57 MiB
// with them (what the commits since the last release touched, which the grouping of commits
// varies: 568 KiB under a loaded CI's race detector).
func TestMappedPagesAreReleased(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 3,200 commits")
	}
	// Put back once the journal is closed (a cleanup registered first runs last): its
	// committer reads the value.
	t.Cleanup(journalfile.SetReleaseEvery(64 << 10))
	j, path := journalfiletest.Create(t)
	writeSequentialCalls(t, j, 1600)
	info, err := os.Stat(path)
	require.NoError(t, err)
	rss := mappedRSS(t, path)
	t.Logf("file %d KiB, resident through the mapping %d KiB", info.Size()>>10, rss>>10)
	assert.Less(t, rss, 896<<10, "resident pages of the journal's mapping")
	rows, err := j.Rows()
	require.NoError(t, err)
	assert.Len(t, rows, 6400, "every row still reads")
}

// readPages reads every row of j, size rows a Page at a time, and returns how many it read.
func readPages(t *testing.T, j *journalfile.Journal, size int) int {
	t.Helper()
	read := 0
	for from := uint64(1); ; {
		page, err := j.Page(from, size)
		require.NoError(t, err)
		if len(page) == 0 {
			return read
		}
		read += len(page)
		from += uint64(len(page))
	}
}

// writeSequentialCalls commits n calls as a sequential run does: its intent, then its end.
func writeSequentialCalls(t *testing.T, j *journalfile.Journal, n int) {
	for i := range n {
		call := "c" + strconv.Itoa(i+1)
		_, err := j.Write(&journal.Row{Type: journal.TypePrepared, Call: call, Index: i + 1, Role: "executor", Node: "step",
			Prompt: strings.Repeat("carry out the step. ", 10), PromptDigest: strings.Repeat("d", 71)},
			&journal.Row{Type: journal.TypeThreadStarted, Call: call, ThreadID: "thread-" + call, Model: "m", Effort: "e"})
		require.NoError(t, err)
		_, err = j.Write(&journal.Row{Type: journal.TypeTurnStarted, Call: call, K: 1, TurnID: "turn-" + call},
			&journal.Row{Type: journal.TypeCompleted, Call: call, Output: json.RawMessage(`"` + strings.Repeat("done ", 20) + `"`)})
		require.NoError(t, err)
	}
}

// TestPagedReadsReleaseMappedPages: a resume pages through the whole journal, and every page
// it reads through bbolt's mapping would stay resident: reading 1,600 calls' rows leaves about
// 1.9 MiB of the file resident without the releases, 0.3 MiB with them.
func TestPagedReadsReleaseMappedPages(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 3,200 commits")
	}
	// Put back once the journal is closed (a cleanup registered first runs last): its
	// committer reads the value.
	t.Cleanup(journalfile.SetReleaseEvery(64 << 10))
	j, path := journalfiletest.Create(t)
	writeSequentialCalls(t, j, 1600)
	require.Equal(t, 6400, readPages(t, j, 256))
	rss := mappedRSS(t, path)
	t.Logf("resident through the mapping after reading every row: %d KiB", rss>>10)
	assert.Less(t, rss, 512<<10, "resident pages of the journal's mapping")
}

// TestTheCheckReleasesMappedPages: the check before an open to write reads every page of the
// file three times (its walk of every key, bbolt's consistency check, the rows), and would leave
// them all resident; the calls' index, whose pages each commit moves to the end of the file,
// maps the 64 KiB around each of them. After the walk of 1,600 calls' journal (~2 MiB) all of
// it is resident without the releases, under 0.5 MiB with them; so after the rows.
func TestTheCheckReleasesMappedPages(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 3,200 commits")
	}
	t.Cleanup(journalfile.SetReleaseEvery(64 << 10))
	j, path := journalfiletest.Create(t)
	writeSequentialCalls(t, j, 1600)
	require.NoError(t, j.Close())
	info, err := os.Stat(path)
	require.NoError(t, err)
	rss := map[string]int{}
	require.NoError(t, journalfile.CheckWalks(path, func(walk string) { rss[walk] = mappedRSS(t, path) }))
	t.Logf("file %d KiB, resident through the mapping after the walk %d KiB, after the rows %d KiB", info.Size()>>10, rss["walk"]>>10, rss["rows"]>>10)
	require.Len(t, rss, 2)
	assert.Less(t, rss["walk"], 512<<10, "resident pages of the journal's mapping after the walk")
	assert.Less(t, rss["rows"], 512<<10, "resident pages of the journal's mapping after the rows")
}

// TestASmallJournalStaysMappedThroughItsReads: a file of at most 16 × releaseEvery (32 MiB; a
// 10,000-call journal is ~16 MiB) is not released while the check walks it, which would only
// have each walk after a release fault it in again; and a whole read of its rows (a resume's
// History) lets it go once at its end; reads of some rows release as they go, as before. Here
// releaseEvery is 64 KiB, so a 600-call journal (1 MiB) is small enough: after the check's
// walk most of it is resident, after the read little of it.
func TestASmallJournalStaysMappedThroughItsReads(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 1,200 commits")
	}
	t.Cleanup(journalfile.SetReleaseEvery(64 << 10))
	j, path := journalfiletest.Create(t)
	writeSequentialCalls(t, j, 600)
	require.NoError(t, j.Close())
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.LessOrEqual(t, info.Size(), int64(1<<20), "a file kept whole")
	rss := map[string]int{}
	require.NoError(t, journalfile.CheckWalks(path, func(walk string) { rss[walk] = mappedRSS(t, path) }))
	t.Logf("file %d KiB, resident through the mapping after the walk %d KiB, after the rows %d KiB", info.Size()>>10, rss["walk"]>>10, rss["rows"]>>10)
	assert.Greater(t, rss["walk"], int(info.Size()/2), "resident pages of the journal's mapping after the walk")
	assert.Greater(t, rss["rows"], int(info.Size()/2), "resident pages of the journal's mapping after the rows")

	j = journalfiletest.Reopen(t, path)
	read := 0
	require.NoError(t, j.Each(1, 0, func(*journal.Row) error { read++; return nil }))
	assert.Equal(t, 2400, read)
	after := mappedRSS(t, path)
	t.Logf("resident through the mapping after reading every row: %d KiB", after>>10)
	assert.Less(t, after, 128<<10, "resident pages of the journal's mapping after the read")

	// Reads of some rows (a reader's pages) release as they go, as in a larger file: nothing
	// would let them go at an end.
	require.Equal(t, 2400, readPages(t, j, 64))
	paged := mappedRSS(t, path)
	t.Logf("resident through the mapping after reading every row a page at a time: %d KiB", paged>>10)
	assert.Less(t, paged, 400<<10, "resident pages of the journal's mapping after the pages")
}

// A writer killed with no close leaves the file's list of free pages as its last commit wrote
// it: the next open to write reads that page instead of walking every page of the file for the
// free ones, which mapped the whole file in (a 100,000-call journal: ~150 MB of a resume's peak
// RSS of ~190 MB).
func TestAnOpenAfterAKilledWriterDoesNotWalkTheFile(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 3,200 commits")
	}
	j, path := journalfiletest.Create(t)
	writeSequentialCalls(t, j, 1600)
	journalfile.Abandon(j)
	info, err := os.Stat(path)
	require.NoError(t, err)

	j, err = journalfile.Open(path)
	require.NoError(t, err)
	defer j.Close()
	resident := mappedRSS(t, path)
	t.Logf("file %d KiB, resident through the mapping after the open to write %d KiB", info.Size()>>10, resident>>10)
	assert.Less(t, resident, int(info.Size()/4), "resident pages of the journal's mapping after the open")
}
