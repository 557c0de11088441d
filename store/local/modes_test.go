package local_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
	"github.com/crw-dev/crw/store/storetest"
)

// Everything the store makes holds prompts and answers: folders are 0700 and files (the
// control socket too) 0600 whatever the umask. Not parallel: the umask is the process's.
func TestModesIgnoreTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "state", "deeper")
	s, err := local.New(root)
	require.NoError(t, err)
	run := storetest.ID(9)
	require.NoError(t, s.Create(ctx, storetest.Spec(run)))
	lease, err := s.Acquire(ctx, run)
	require.NoError(t, err)
	_, err = lease.Journal().Write(&journal.Row{Type: journal.TypeWarning, Reason: "x"})
	require.NoError(t, err)
	lease.Publish(&store.Status{Run: run, State: store.StateRunning})
	require.NoError(t, s.RequestCancel(ctx, run))
	_, err = s.PutFile(ctx, []byte("export default 1"))
	require.NoError(t, err)
	require.NoError(t, s.Records(run, "decisions").Create(ctx, "k1", []byte(`{}`)))
	require.NoError(t, s.Records("", "audit").Put(ctx, "k2", []byte(`{}`)))
	require.NoError(t, s.Log(run).Append([]byte(`{"line":1}`)))
	require.NoError(t, s.Log("").Append([]byte(`{"line":2}`)))

	seen := map[string]bool{}
	require.NoError(t, filepath.WalkDir(filepath.Dir(root), func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		info, err := os.Lstat(path)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, path)
		seen[filepath.Base(path)] = true
		switch {
		case info.IsDir():
			assert.Equal(t, fs.ModeDir|0o700, info.Mode(), "folder %s", rel)
		case info.Mode()&fs.ModeSocket != 0:
			assert.Equal(t, fs.ModeSocket|0o600, info.Mode(), "socket %s", rel)
		default:
			assert.Equal(t, fs.FileMode(0o600), info.Mode(), "file %s", rel)
		}
		return nil
	}))
	for _, name := range []string{local.JournalFile, local.JournalLog, local.SpecFile, local.ControlSocket, local.RunLockFile, "crw.log", "cancel.json", "k1.json", "k2.json"} {
		assert.True(t, seen[name], "%s was made", name)
	}
	require.NoError(t, lease.Release())
}
