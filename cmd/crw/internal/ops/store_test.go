package ops

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/etcd"
)

// TestCrwLeavesEtcdToCrwEtcd: crw's own stores open no store on etcd; they name crw-etcd,
// under the scheme the etcd store's addresses have.
func TestCrwLeavesEtcdToCrwEtcd(t *testing.T) {
	s := CrwStores()
	assert.Empty(t, s.Open)
	assert.Equal(t, map[string]string{etcd.Scheme: "crw-etcd"}, s.SpokenBy)
}

// TestAStoreNoExecutableSpeaksIsRefusedByName: when the executable a store is left to is
// neither beside this one nor on $PATH, the hand-off does nothing and opening the store says
// which executable is missing; an address of no known scheme is no store address.
func TestAStoreNoExecutableSpeaksIsRefusedByName(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(handedOffEnv, "")
	s := Stores{SpokenBy: map[string]string{"etcd": "crw-etcd-nowhere"}}
	require.NoError(t, s.HandOff("etcd://127.0.0.1:2379/p", []string{"flow", "list"}))
	_, _, _, err := s.OpenStore(context.Background(), "etcd://127.0.0.1:2379/p", t.TempDir(), backend.NewRegistry())
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, errs.CapabilityUnavailable, e.Code)
	assert.Contains(t, e.Detail, "crw-etcd-nowhere")
	assert.Contains(t, e.Detail, "etcd://127.0.0.1:2379/p")

	_, _, _, err = s.OpenStore(context.Background(), "zk://127.0.0.1:2181/p", t.TempDir(), backend.NewRegistry())
	e, ok = errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, errs.InvalidRequest, e.Code)
}

// TestAHandedOffProcessDoesNotHandOn: a process a command was handed to, which does not
// speak the store either, says so instead of handing the command on (a loop of executions).
func TestAHandedOffProcessDoesNotHandOn(t *testing.T) {
	dir := t.TempDir()
	impostor := filepath.Join(dir, "crw-etcd")
	require.NoError(t, os.WriteFile(impostor, []byte("#!/bin/sh\nexit 3\n"), 0o755))
	t.Setenv("PATH", dir)
	t.Setenv(handedOffEnv, "/usr/bin/crw")
	err := Stores{SpokenBy: map[string]string{"etcd": "crw-etcd"}}.HandOff("etcd://127.0.0.1:2379/p", []string{"flow", "list"})
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, errs.CapabilityUnavailable, e.Code)
	assert.Contains(t, e.Detail, "/usr/bin/crw")
	assert.Contains(t, e.Detail, "does not speak")
}

// TestAStoreThisBuildSpeaksIsOpenedHere: a build that opens a scheme's stores neither hands a
// command on one off nor leaves it: its opener is given the address and the state folder.
func TestAStoreThisBuildSpeaksIsOpenedHere(t *testing.T) {
	var got []string
	s := Stores{
		Open: map[string]StoreOpener{"etcd": func(_ context.Context, address, root string, _ *backend.Registry) (*engine.Service, store.Store, error) {
			got = append(got, address, root)
			return &engine.Service{}, nil, nil
		}},
		SpokenBy: map[string]string{"etcd": "crw-etcd"},
	}
	require.NoError(t, s.HandOff("etcd://h:1/p", nil))
	svc, _, loc, err := s.OpenStore(context.Background(), "etcd://h:1/p", "/state", backend.NewRegistry())
	require.NoError(t, err)
	assert.NotNil(t, svc)
	assert.Nil(t, loc, "a store on etcd has no local store")
	assert.Equal(t, []string{"etcd://h:1/p", "/state"}, got)
}
