package cluster_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/etcdtest"
	"github.com/crw-dev/crw/store/etcd/cluster"
)

// TestDialAsAUser: a cluster with etcd's auth on takes the user an address names with the
// password from $CRW_ETCD_PASSWORD; a missing or wrong password, or no user, is said at Dial,
// and the password is in no error.
func TestDialAsAUser(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	c.EnableAuth(t, "root-secret-1")

	host := strings.TrimPrefix(c.Members[0].ClientURL, "http://")
	withUser, err := cluster.ParseAddress("etcd://root@" + host + "/crw")
	require.NoError(t, err)
	noUser, err := cluster.ParseAddress("etcd://" + host + "/crw")
	require.NoError(t, err)

	t.Setenv(cluster.PasswordEnv, "root-secret-1")
	cli, err := cluster.Dial(ctx, withUser)
	require.NoError(t, err)
	_, err = cli.Put(ctx, "/crw/k", "v")
	require.NoError(t, err, "the user writes")
	cli.Close()

	t.Setenv(cluster.PasswordEnv, "wrong-secret-2")
	_, err = cluster.Dial(ctx, withUser)
	require.Error(t, err)
	assert.Equal(t, errs.RunUnavailable, errs.CodeOf(err))
	assert.NotContains(t, err.Error(), "wrong-secret-2")

	_, err = cluster.Dial(ctx, noUser)
	require.Error(t, err, "no user, and the cluster asks for one")
	assert.Contains(t, err.Error(), "etcd://"+host+"/crw")
}

// TestDialSaysWhatIsMissing: a user with no password given, and TLS files that cannot be
// read, are refused before any connection, naming the variable or file.
func TestDialSaysWhatIsMissing(t *testing.T) {
	ctx := context.Background()
	a, err := cluster.ParseAddress("etcd://ops@127.0.0.1:1/crw")
	require.NoError(t, err)
	t.Setenv(cluster.PasswordEnv, "")
	require.NoError(t, os.Unsetenv(cluster.PasswordEnv))
	_, err = cluster.Dial(ctx, a)
	require.Error(t, err)
	assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err))
	assert.Contains(t, err.Error(), "give the password in $CRW_ETCD_PASSWORD")

	a, err = cluster.ParseAddress("etcd://127.0.0.1:1/crw?ca=/no/such/ca.pem")
	require.NoError(t, err)
	_, err = cluster.Dial(ctx, a)
	require.Error(t, err)
	assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err))
	assert.Contains(t, err.Error(), "/no/such/ca.pem")

	a, err = cluster.ParseAddress("etcd://127.0.0.1:1/crw?cert=/no/c.pem&key=/no/k.pem")
	require.NoError(t, err)
	_, err = cluster.Dial(ctx, a)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/no/c.pem")
}

// TestDialOverTLS: a cluster that serves clients over TLS and takes only those that show a
// certificate of its CA is reached with the address's CA and client certificate; without the
// client certificate, without the CA (the system's roots do not know it) or without TLS, Dial
// says it cannot reach the cluster.
func TestDialOverTLS(t *testing.T) {
	certs := etcdtest.NewCerts(t)
	c := etcdtest.StartTLS(t, 1, certs)
	ctx := context.Background()
	host := strings.TrimPrefix(c.Members[0].ClientURL, "https://")
	full, err := cluster.ParseAddress("etcd://" + host + "/crw?ca=" + certs.CA + "&cert=" + certs.ClientCert + "&key=" + certs.ClientKey)
	require.NoError(t, err)
	cli, err := cluster.Dial(ctx, full)
	require.NoError(t, err)
	_, err = cli.Put(ctx, "/crw/k", "over TLS")
	require.NoError(t, err)
	cli.Close()

	for name, query := range map[string]string{
		"no client certificate": "?ca=" + certs.CA,
		"no CA":                 "?tls=1&cert=" + certs.ClientCert + "&key=" + certs.ClientKey,
		"no TLS":                "",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, err := cluster.ParseAddress("etcd://" + host + "/crw" + query)
			require.NoError(t, err)
			_, err = cluster.Dial(ctx, a)
			require.Error(t, err)
			assert.Equal(t, errs.RunUnavailable, errs.CodeOf(err))
			assert.Contains(t, err.Error(), "the etcd cluster did not answer")
		})
	}
}
