package loader

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDiskProgramsAreCompiledOncePerContent: two loaders of one workflow in one process (a
// run's check at its creation, then its run) share its compiled program; an edited file is
// compiled again, and a loader with a static pass compiles what it is shown.
func TestDiskProgramsAreCompiledOncePerContent(t *testing.T) {
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte("export default function main() { return 1; }\n"), 0o600))
	program := func(cfg Config) *goja.Program {
		t.Helper()
		l, err := New(cfg)
		require.NoError(t, err)
		_, err = l.Main(goja.New())
		require.NoError(t, err)
		real, err := filepath.EvalSymlinks(wf)
		require.NoError(t, err)
		prg := l.programs[real]
		require.NotNil(t, prg)
		return prg
	}
	first := program(Config{Entry: wf})
	assert.Same(t, first, program(Config{Entry: wf}), "the same content is compiled once")
	parsed := 0
	linted := program(Config{Entry: wf, OnParse: func(*ast.Program, []byte) { parsed++ }})
	assert.NotSame(t, first, linted)
	assert.Equal(t, 1, parsed, "a static pass sees the module")

	require.NoError(t, os.WriteFile(wf, []byte("export default function main() { return 2; }\n"), 0o600))
	edited := program(Config{Entry: wf})
	assert.NotSame(t, first, edited, "an edited file is compiled again")
	assert.Same(t, edited, program(Config{Entry: wf}))
}

// TestProgramCacheIsBounded: the cache holds sources of limit bytes at most; one that would
// pass it empties it first, and a source larger than limit is not kept.
func TestProgramCacheIsBounded(t *testing.T) {
	c := programCache{limit: 100}
	a, b, big := &goja.Program{}, &goja.Program{}, &goja.Program{}
	c.put([32]byte{1}, 60, a)
	assert.Same(t, a, c.get([32]byte{1}))
	c.put([32]byte{2}, 60, b)
	assert.Nil(t, c.get([32]byte{1}), "emptied to make room")
	assert.Same(t, b, c.get([32]byte{2}))
	assert.Equal(t, 60, c.bytes)
	c.put([32]byte{3}, 101, big)
	assert.Nil(t, c.get([32]byte{3}))
	assert.Same(t, b, c.get([32]byte{2}))
}
