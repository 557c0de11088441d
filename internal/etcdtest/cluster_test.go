package etcdtest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/internal/etcdtest"
)

// TestAClusterOutlivesAStoppedMemberAndItsLeader: a three-member cluster of real etcd
// processes takes writes while a follower is SIGSTOPped and after its leader is SIGKILLed; the
// members, continued and started again on their data, catch up with every write they missed,
// each once.
func TestAClusterOutlivesAStoppedMemberAndItsLeader(t *testing.T) {
	c := etcdtest.Start(t, 3)
	cli := c.AdminClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	via := func(m *etcdtest.Member, key, value string) {
		t.Helper()
		one, err := etcdtest.NewClient(m.ClientURL)
		require.NoError(t, err)
		defer one.Close()
		_, err = one.Put(ctx, key, value)
		require.NoError(t, err, "put %s=%s through %s", key, value, m.Name)
	}
	read := func(m *etcdtest.Member) (string, int64) {
		t.Helper()
		one, err := etcdtest.NewClient(m.ClientURL)
		require.NoError(t, err)
		defer one.Close()
		got, err := one.Get(ctx, "k") // linearizable: the member answers once it has the log
		require.NoError(t, err)
		require.Len(t, got.Kvs, 1)
		return string(got.Kvs[0].Value), got.Kvs[0].Version
	}

	leader, err := c.WaitLeader(ctx, cli, nil)
	require.NoError(t, err)
	via(leader, "k", "1")

	var follower *etcdtest.Member
	for _, m := range c.Members {
		if m != leader {
			follower = m
			break
		}
	}
	follower.Stop()
	via(leader, "k", "2") // two of three answer: a quorum
	follower.Cont()

	leader.Kill()
	next, err := c.WaitLeader(ctx, cli, leader)
	require.NoError(t, err)
	via(next, "k", "3")

	require.NoError(t, c.Restart(ctx, leader))
	for _, m := range c.Members {
		value, version := read(m)
		assert.Equal(t, "3", value, m.Name)
		assert.Equal(t, int64(3), version, "%s: the three writes, each once", m.Name)
	}
}

// TestAProxyPartitionsAClientAndDeliversLateWhenHealed: a client reaching a member through a
// Proxy gets no answer while it is partitioned, and a put it sent then reaches the member,
// late, once the proxy heals.
func TestAProxyPartitionsAClientAndDeliversLateWhenHealed(t *testing.T) {
	c := etcdtest.Start(t, 1)
	direct := c.Client(t)
	p := etcdtest.NewProxy(t, strings.TrimPrefix(c.Members[0].ClientURL, "http://"))
	via, err := etcdtest.NewClient(p.Addr)
	require.NoError(t, err)
	defer via.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = via.Put(ctx, "k", "before")
	require.NoError(t, err)

	p.Partition()
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = via.Get(short, "k")
	cancelShort()
	require.ErrorIs(t, err, context.DeadlineExceeded, "no answer through a partition")
	late := make(chan error, 1)
	go func() {
		_, err := via.Put(ctx, "k", "during")
		late <- err
	}()
	// A write the member had would show here: the put is held in the partition.
	for range 3 {
		got, err := direct.Get(ctx, "k")
		require.NoError(t, err)
		require.Equal(t, "before", string(got.Kvs[0].Value))
	}
	p.Heal()
	require.NoError(t, <-late)
	got, err := direct.Get(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, "during", string(got.Kvs[0].Value), "the held put arrived once healed")
}

// TestAClusterWhoseMemberCouldNotBindIsStartedAgain: a member whose process exits before it
// serves (another process took its port first) has the cluster started again on other ports.
// The etcd here is a script that exits on its first start and runs the real server after.
func TestAClusterWhoseMemberCouldNotBindIsStartedAgain(t *testing.T) {
	etcd := etcdtest.Binary(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "etcd")
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
if mkdir "`+filepath.Join(dir, "once")+`" 2>/dev/null; then echo "listen tcp: address already in use" >&2; exit 1; fi
exec "`+etcd+`" "$@"
`), 0o700))
	t.Setenv(etcdtest.Env, script)
	c := etcdtest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Client(t).Put(ctx, "k", "v")
	require.NoError(t, err)
}
