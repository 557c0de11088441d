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

// TestWarmCompilesWhatTheLoadFinds: Warm compiles a workflow's entry module into the shared
// programs, where the next load of the same content finds it compiled; a static pass is not
// shown it (the load that has one compiles its own and shows it), a module that does not
// compile is left for the load to report, and a path that is no workflow file is no failure.
func TestWarmCompilesWhatTheLoadFinds(t *testing.T) {
	dir := t.TempDir()
	wf := filepath.Join(dir, "warm.js")
	require.NoError(t, os.WriteFile(wf, []byte("export default function main() { return 'warm'; }\n"), 0o600))
	real, err := filepath.EvalSymlinks(wf)
	require.NoError(t, err)
	src, err := os.ReadFile(wf)
	require.NoError(t, err)
	require.Nil(t, diskPrograms.get(programKey(kindJS, real, src)), "compiled before the test")

	parsed := 0
	Warm(Config{Entry: wf, OnParse: func(*ast.Program, []byte) { parsed++ }})
	assert.Zero(t, parsed, "Warm shows no static pass the module")
	warmed := diskPrograms.get(programKey(kindJS, real, src))
	require.NotNil(t, warmed, "Warm compiled the entry under its content's key")

	l, err := New(Config{Entry: wf})
	require.NoError(t, err)
	main, err := l.Main(goja.New())
	require.NoError(t, err)
	assert.Same(t, warmed, l.programs[real], "the load found the program Warm compiled")
	out, err := main(goja.Undefined())
	require.NoError(t, err)
	assert.Equal(t, "warm", out.Export())

	broken := filepath.Join(dir, "broken.js")
	require.NoError(t, os.WriteFile(broken, []byte("export default function main( {\n"), 0o600))
	Warm(Config{Entry: broken})
	l, err = New(Config{Entry: broken})
	require.NoError(t, err)
	_, err = l.Main(goja.New())
	var le *LoadError
	require.ErrorAs(t, err, &le, "the load reports what Warm could not compile")
	assert.Equal(t, CodeSyntax, le.Code)

	Warm(Config{Entry: filepath.Join(dir, "missing.js")})
	Warm(Config{Entry: dir})
	Warm(Config{Entry: filepath.Join(dir, "notes.txt")})
}
