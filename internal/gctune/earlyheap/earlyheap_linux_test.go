package earlyheap

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

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

	assert.Contains(t, strings.Fields(mappingOf(t, Readied.Chunk).flags), "hg", "VmFlags of the mapping at %#x", Readied.Chunk)
	if len(Readied.Collapsed) == 0 {
		t.Logf("no page was collapsed (the system had no huge page to give, or no MADV_COLLAPSE)")
	}
	for _, at := range Readied.Collapsed {
		assert.Zero(t, at%hugePage, "a collapsed page's start %#x", at)
		assert.True(t, at >= Readied.Chunk && at < Readied.End, "collapsed page %#x outside %#x-%#x", at, Readied.Chunk, Readied.End)
	}
	// The range advised is a mapping of its own (its advice sets it apart from the heap
	// around it): its huge pages are at least the ones collapsed.
	assert.GreaterOrEqual(t, mappingOf(t, Readied.Chunk).hugeKB, len(Readied.Collapsed)*hugePage>>10, "AnonHugePages of the mapping of %#x", Readied.Chunk)
}

// TestTheTextIsMappedAtOnce: this test binary's text (the mapping that holds its code) was
// mapped whole by the init, every page of it resident in the process's page tables, where the
// code run so far would have faulted in only the parts of it around what ran.
func TestTheTextIsMappedAtOnce(t *testing.T) {
	fn := TestTheTextIsMappedAtOnce
	pc := **(**uintptr)(unsafe.Pointer(&fn))
	require.NotZero(t, Readied.TextStart, "the text's mapping was not found in /proc/self/maps")
	if errors.Is(Readied.TextErr, syscall.EINVAL) {
		t.Skipf("this kernel has no MADV_POPULATE_READ (Linux 5.14): %v", Readied.TextErr)
	}
	require.NoError(t, Readied.TextErr, "the text was not mapped")
	require.True(t, Readied.TextStart <= pc && pc < Readied.TextEnd, "the range mapped, %#x-%#x, does not hold this test's code at %#x", Readied.TextStart, Readied.TextEnd, pc)
	text := mappingOf(t, pc)
	assert.Contains(t, text.flags, "ex", "the mapping of %#x is no text: VmFlags%s", pc, text.flags)
	assert.Equal(t, int(Readied.TextEnd-Readied.TextStart)>>10, text.sizeKB, "the text mapping's size")
	assert.Equal(t, text.sizeKB, text.rssKB, "kB of the text resident")
}

func TestTheTextMappingIsFoundByItsCode(t *testing.T) {
	// Addresses a 32-bit process may have too.
	maps := []byte("0c000000-0c400000 rw-p 00000000 00:00 0 \n" +
		"55d00000-55d10000 r--p 00000000 fe:00 12 /usr/bin/crw\n" +
		"55d10000-55d20000 r-xp 00100000 fe:00 12 /usr/bin/crw\n" +
		"7ffc0000-7ffc2000 r-xp 00000000 00:00 0 [vdso]\n" +
		"7ffd0000-7ffd1000 r-xp 00000000 00:00 0 [cut")
	for _, c := range []struct {
		pc         uintptr
		start, end uintptr
		ok         bool
	}{
		{0x55d12345, 0x55d10000, 0x55d20000, true},
		{0x55d10000, 0x55d10000, 0x55d20000, true},
		{0x55d20000, 0, 0, false}, // the end is past the mapping
		{0x55d08000, 0, 0, false}, // read-only, not executable
		{0x0c001000, 0, 0, false}, // the heap's
		{0x7ffd0010, 0, 0, false}, // a line cut off
		{0x7ffc0010, 0x7ffc0000, 0x7ffc2000, true},
	} {
		start, end, ok := textMapping(maps, c.pc)
		assert.Equal(t, []any{c.start, c.end, c.ok}, []any{start, end, ok}, "pc %#x", c.pc)
	}
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

// mapping is what /proc/self/smaps says of one of this process's mappings.
type mapping struct {
	flags                 string // VmFlags
	sizeKB, rssKB, hugeKB int    // Size, Rss and AnonHugePages in kB
}

// mappingOf reads this process's mapping that holds addr from /proc/self/smaps.
func mappingOf(t *testing.T, addr uintptr) mapping {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	var m mapping
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
		kB := func() int {
			require.Len(t, fields, 3, "%s", line)
			n, err := strconv.Atoi(fields[1])
			require.NoError(t, err, "%s", line)
			return n
		}
		switch fields[0] {
		case "VmFlags:":
			m.flags = strings.TrimPrefix(line, "VmFlags:")
		case "Size:":
			m.sizeKB = kB()
		case "Rss:":
			m.rssKB = kB()
		case "AnonHugePages:":
			m.hugeKB = kB()
		}
	}
	require.NoError(t, s.Err())
	require.True(t, found, "no mapping holds %#x", addr)
	return m
}
