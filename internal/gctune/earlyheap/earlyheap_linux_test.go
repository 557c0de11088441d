package earlyheap

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheFirstChunkIsAdvisedForHugePages: this test binary imports the package, so its init has
// run as it does in crw's process: the mapping of the heap's first chunk is advised for huge
// pages ("hg" in its VmFlags), and where its pages in use were collapsed, they are huge pages.
func TestTheFirstChunkIsAdvisedForHugePages(t *testing.T) {
	if mode, err := os.ReadFile(thpMode); err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("this system gives no transparent huge pages (%s: %q, %v)", thpMode, mode, err)
	}
	require.True(t, Readied.Advised, "the first chunk's advice")
	require.NotZero(t, Readied.Chunk)
	assert.Zero(t, Readied.Chunk%chunk, "the chunk's start %#x", Readied.Chunk)

	flags, _ := mappingOf(t, Readied.Chunk)
	assert.Contains(t, strings.Fields(flags), "hg", "VmFlags of the mapping at %#x", Readied.Chunk)
	if Readied.Collapsed {
		// The pages in use are huge pages now, all of them: the rest of the chunk is
		// advised otherwise so that its mapping is one of its own, whose huge pages are
		// only the ones collapsed.
		require.True(t, madvise(Readied.InUse, Readied.Chunk+chunk-Readied.InUse, syscall.MADV_NOHUGEPAGE))
		_, hugeKB := mappingOf(t, Readied.Chunk)
		assert.Equal(t, int(Readied.InUse-Readied.Chunk)>>10, hugeKB, "AnonHugePages of the pages in use, %#x to %#x", Readied.Chunk, Readied.InUse)
	} else {
		t.Logf("the pages in use were not collapsed (the system had no huge page to give, or no MADV_COLLAPSE)")
	}
}

// TestGodebugDisablethpLeavesTheHeapAsItIs: a process started with GODEBUG=disablethp=1 gets
// no advice.
func TestGodebugDisablethpLeavesTheHeapAsItIs(t *testing.T) {
	if os.Getenv(reportReadied) != "" {
		t.Logf("readied advised=%v collapsed=%v", Readied.Advised, Readied.Collapsed)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGodebugDisablethpLeavesTheHeapAsItIs$", "-test.v")
	cmd.Env = append(os.Environ(), reportReadied+"=1", "GODEBUG=disablethp=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "readied advised=false collapsed=false", "%s", out)
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
