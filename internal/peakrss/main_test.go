package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A child started through peakrss has its own peak reported, where the same child started by a
// process of 64 MB reads as at least 64 MB; its exit code and streams are its own.
func TestAChildsPeakIsItsOwn(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "peakrss")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	ballast := make([]byte, 64<<20)
	for i := range ballast {
		ballast[i] = 1 // resident
	}
	direct := exec.Command("true")
	require.NoError(t, direct.Run())
	inherited := direct.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	assert.GreaterOrEqual(t, inherited, int64(64<<20), "started from this process, a child reads as this process's size")

	run := func(args ...string) (exit int, wall, rss int64, stdout string) {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		cmd := exec.Command(bin, args...)
		cmd.ExtraFiles = []*os.File{w}
		outBytes, err := cmd.Output()
		w.Close()
		if err != nil {
			_, ok := err.(*exec.ExitError)
			require.True(t, ok, "%v", err)
		}
		n, err := fmt.Fscan(r, &wall, &rss)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		return cmd.ProcessState.ExitCode(), wall, rss, string(outBytes)
	}
	exit, wall, rss, _ := run("true")
	assert.Equal(t, 0, exit)
	assert.Positive(t, wall)
	assert.Positive(t, rss)
	assert.Less(t, rss, int64(16<<20), "through peakrss, the child's own peak")

	exit, _, _, stdout := run("sh", "-c", "echo out; exit 3")
	assert.Equal(t, 3, exit)
	assert.Equal(t, "out\n", stdout)
	_ = ballast[len(ballast)-1]
}
