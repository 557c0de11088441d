package earlyheap

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheFirstChunkIsAdvisedForHugePages: this test binary imports the package, so its init has
// run as it does in crw's process: the mapping of the heap's first chunk is advised for huge
// pages ("hg" in its VmFlags), and the 2 MiB pages it collapsed are huge pages.
func TestTheFirstChunkIsAdvisedForHugePages(t *testing.T) {
	if mode, err := os.ReadFile(thpMode); err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("this system gives no transparent huge pages (%s: %q, %v)", thpMode, mode, err)
	}
	require.True(t, Readied.Advised, "the first chunk's advice")
	require.NotZero(t, Readied.Chunk)
	assert.Zero(t, Readied.Chunk%chunk, "the chunk's start %#x", Readied.Chunk)
	assert.Contains(t, []uintptr{chunk, 2 * chunk}, Readied.End-Readied.Chunk, "the range advised, %#x to %#x", Readied.Chunk, Readied.End)

	flags, _ := mappingOf(t, Readied.Chunk)
	assert.Contains(t, strings.Fields(flags), "hg", "VmFlags of the mapping at %#x", Readied.Chunk)
	if len(Readied.Collapsed) == 0 {
		t.Logf("no page was collapsed (the system had no huge page to give, or no MADV_COLLAPSE)")
	}
	for _, at := range Readied.Collapsed {
		assert.Zero(t, at%hugePage, "a collapsed page's start %#x", at)
		assert.True(t, at >= Readied.Chunk && at < Readied.End, "collapsed page %#x outside %#x-%#x", at, Readied.Chunk, Readied.End)
	}
	// The range advised is a mapping of its own (its advice sets it apart from the heap
	// around it): its huge pages are at least the ones collapsed.
	_, hugeKB := mappingOf(t, Readied.Chunk)
	assert.GreaterOrEqual(t, hugeKB, len(Readied.Collapsed)*hugePage>>10, "AnonHugePages of the mapping of %#x", Readied.Chunk)
}

// TestTheHeapBeginsWhereTheAdviceDoes: the heap grows up from its first page, which Go places at
// random in its first chunk; wherever that is, no page under the range advised is the heap's
// (in use) in any of a few dozen processes, each with its own heap base.
func TestTheHeapBeginsWhereTheAdviceDoes(t *testing.T) {
	if os.Getenv(reportReadied) != "" {
		var resident [chunk / page]byte
		if Readied.Advised && inCore(Readied.Chunk-chunk, Readied.Chunk, resident[:]) && anyResident(resident[:]) {
			t.Errorf("the chunk under %#x has pages in use", Readied.Chunk)
		}
		return
	}
	for i := 0; i < 32; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTheHeapBeginsWhereTheAdviceDoes$", "-test.v")
		cmd.Env = append(os.Environ(), reportReadied+"=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "process %d:\n%s", i, out)
	}
}

// TestGodebugDisablethpLeavesTheHeapAsItIs: a process started with GODEBUG=disablethp=1 gets
// no advice.
func TestGodebugDisablethpLeavesTheHeapAsItIs(t *testing.T) {
	if os.Getenv(reportReadied) != "" {
		t.Logf("readied advised=%v collapsed=%d", Readied.Advised, len(Readied.Collapsed))
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGodebugDisablethpLeavesTheHeapAsItIs$", "-test.v")
	cmd.Env = append(os.Environ(), reportReadied+"=1", "GODEBUG=disablethp=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "readied advised=false collapsed=0", "%s", out)
}

// reportReadied marks the process TestGodebugDisablethpLeavesTheHeapAsItIs starts.
const reportReadied = "CRW_EARLYHEAP_REPORT"

func TestRefused(t *testing.T) {
	for godebug, want := range map[string]bool{
		"":                                    false,
		"disablethp=1":                        true,
		"madvdontneed=1,disablethp=1":         true,
		"disablethp=1,disablethp=0":           false,
		"disablethp=0":                        false,
		"disablethp=":                         false,
		"disablethp=1,disablethp=x":           true,
		"xdisablethp=1":                       false,
		"disablethp=0,gctrace=1,disablethp=2": true,
		"disablethp=+1":                       true,
		"disablethp=-1":                       true,
		"disablethp=-0":                       false,
		"disablethp=1,disablethp=-":           true,
		"disablethp=2147483647":               true,
		"disablethp=-2147483648":              true,
		"disablethp=2147483648":               false, // past an int32: ignored, as by the runtime
		"disablethp=1,disablethp=99999999999": true,
		"disablethp=1 ":                       false,
		"disablethp=0x1":                      false,
		"disablethp=1_0":                      false,
		"disablethp":                          false,
		",,disablethp=1,":                     true,
	} {
		assert.Equal(t, want, refused(godebug), "GODEBUG=%q", godebug)
	}
}

// thpMode is where Linux says when it gives transparent huge pages: always, madvise or never.
const thpMode = "/sys/kernel/mm/transparent_hugepage/enabled"

// mappingOf reads this process's mapping that holds addr from /proc/self/smaps: its VmFlags
// and its AnonHugePages in kB.
func mappingOf(t *testing.T, addr uintptr) (flags string, hugeKB int) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	in := false
	found := false
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		fields := strings.Fields(line)
		if len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			lo, hi, ok := strings.Cut(fields[0], "-")
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			in = ok && err1 == nil && err2 == nil && uint64(addr) >= start && uint64(addr) < end
			found = found || in
			continue
		}
		if !in {
			continue
		}
		switch {
		case strings.HasPrefix(line, "VmFlags:"):
			flags = strings.TrimPrefix(line, "VmFlags:")
		case strings.HasPrefix(line, "AnonHugePages:") && len(fields) >= 2:
			hugeKB, err = strconv.Atoi(fields[1])
			require.NoError(t, err, "%s", line)
		}
	}
	require.NoError(t, s.Err())
	require.True(t, found, "no mapping holds %#x", addr)
	return flags, hugeKB
}
