package local_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
	"github.com/crw-dev/crw/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) (store.Store, store.Store) {
			// A deep folder: its sockets' paths are longer than a unix socket's name may be.
			root := filepath.Join(t.TempDir(), strings.Repeat("state-folder-", 6))
			s, err := local.New(root)
			require.NoError(t, err)
			other, err := local.New(root)
			require.NoError(t, err)
			return s, other
		},
		// A lease is lost when the run's lock file is replaced behind its holder's back.
		Revoke: func(t *testing.T, s store.Store, run string) {
			dir := s.(*local.Store).RunDir(run)
			fresh := filepath.Join(dir, "run.lock.new")
			require.NoError(t, os.WriteFile(fresh, nil, 0o600))
			require.NoError(t, os.Rename(fresh, filepath.Join(dir, local.RunLockFile)))
		},
	})
}
