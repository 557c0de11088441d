package ops

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store/local"
)

// TestOwnerStateWritableChecksWhatTheRunWrites: seed 003, owner_state_writable judges the run's
// folder, the flow-bound folder, the owner's app server socket and the repository, and names
// each part that cannot be written.
func TestOwnerStateWritableChecksWhatTheRunWrites(t *testing.T) {
	dir := t.TempDir()
	st, err := local.New(filepath.Join(dir, "state"))
	require.NoError(t, err)
	sock := filepath.Join(dir, "owner.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	repo := enginetest.GitRepo(t, map[string]string{"README.md": "# the project\n"})
	fact := func(of PreviewOf) Fact {
		t.Helper()
		of.Owner = "019b0000-0000-7000-8000-00000000abcd"
		for _, f := range SessionPreview(st, of).Facts {
			if f.Name == "owner_state_writable" {
				return f
			}
		}
		t.Fatal("no owner_state_writable fact")
		return Fact{}
	}

	ok := fact(PreviewOf{Run: "20261204-100000-aaaaaa", Host: "unix://" + sock, Repo: repo})
	assert.True(t, ok.OK, ok.Detail)
	assert.Equal(t, "writable: the run folder "+st.RunDir("20261204-100000-aaaaaa")+", "+filepath.Join(st.Root(), "flow-bound")+
		", the owner's app server socket "+sock+", the repository's git folder "+filepath.Join(repo, ".git"), ok.Detail)

	gone := fact(PreviewOf{Host: "unix://" + filepath.Join(dir, "gone.sock"), Repo: repo})
	assert.False(t, gone.OK)
	assert.Contains(t, gone.Detail, "the owner's app server socket "+filepath.Join(dir, "gone.sock")+": stat ")

	file := filepath.Join(dir, "file.sock")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	notSocket := fact(PreviewOf{Host: "unix://" + file})
	assert.False(t, notSocket.OK)
	assert.Contains(t, notSocket.Detail, file+": not a socket")

	plain := t.TempDir()
	noRepo := fact(PreviewOf{Repo: plain})
	assert.False(t, noRepo.OK)
	assert.Contains(t, noRepo.Detail, "the repository's git folder "+plain+": not a git checkout")

	private := fact(PreviewOf{}) // a private app server, no repository: the folders alone
	assert.True(t, private.OK, private.Detail)
	assert.Equal(t, "writable: the state folder "+st.Root()+", "+filepath.Join(st.Root(), "flow-bound"), private.Detail)
}
