package cluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/store/etcd/cluster"
)

func TestParseAddress(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want cluster.Address
	}{
		{"etcd://127.0.0.1:2379/crw", cluster.Address{Endpoints: []string{"127.0.0.1:2379"}, Prefix: "/crw"}},
		{"etcd://a:1,b:2,[::1]:3/team/crw/", cluster.Address{Endpoints: []string{"a:1", "b:2", "[::1]:3"}, Prefix: "/team/crw"}},
		{"etcd://ops@a:2379/crw?tls=1", cluster.Address{Endpoints: []string{"a:2379"}, Prefix: "/crw", User: "ops", TLS: true}},
		{"etcd://a:2379/crw?ca=/etc/ca.pem&cert=/etc/c.pem&key=/etc/k.pem", cluster.Address{Endpoints: []string{"a:2379"}, Prefix: "/crw",
			TLS: true, CA: "/etc/ca.pem", Cert: "/etc/c.pem", Key: "/etc/k.pem"}},
		{"etcd://a:2379/with%20space", cluster.Address{Endpoints: []string{"a:2379"}, Prefix: "/with space"}},
		{"etcd://a:2379/crw?ttl=30s", cluster.Address{Endpoints: []string{"a:2379"}, Prefix: "/crw", TTL: 30 * time.Second}},
		{"etcd://a:2379/crw?ttl=1h", cluster.Address{Endpoints: []string{"a:2379"}, Prefix: "/crw", TTL: time.Hour}},
	} {
		got, err := cluster.ParseAddress(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
		again, err := cluster.ParseAddress(got.String())
		require.NoError(t, err, "%s as %s", tt.in, got)
		assert.Equal(t, got, again, "String reads back: %s", got)
	}
}

func TestParseAddressRefuses(t *testing.T) {
	for _, tt := range []struct{ in, says string }{
		{"http://a:2379/crw", "starts with etcd://"},
		{"etcd://ops:secret@a:2379/crw", "CRW_ETCD_PASSWORD"},
		{"etcd://@a:2379/crw", "empty user"},
		{"etcd:///crw", "no member"},
		{"etcd://a/crw", `member "a" is not HOST:PORT`},
		{"etcd://a:0/crw", "no port from 1 to 65535"},
		{"etcd://a:99999/crw", "no port from 1 to 65535"},
		{"etcd://a:1,,b:2/crw", `member "" is not HOST:PORT`},
		{"etcd://a:2379", "prefix"},
		{"etcd://a:2379/", "prefix"},
		{"etcd://a:2379/x/../y", "prefix"},
		{"etcd://a:2379/x//y", "prefix"},
		{"etcd://a:2379/x//", "prefix"},
		{"etcd://a:2379/x%00y", "prefix"},
		{"etcd://a:2379/x%zz", "prefix"},
		{"etcd://a:2379/crw?tls=yes", "tls is 1 or 0"},
		{"etcd://a:2379/crw?cert=/c.pem", "both cert and key"},
		{"etcd://a:2379/crw?ca=a&ca=b", "given 2 times"},
		{"etcd://a:2379/crw?timeout=5", `unknown parameter "timeout"`},
		{"etcd://a:2379/crw?ttl=1s", "ttl is whole seconds from 2s to 1h0m0s"},
		{"etcd://a:2379/crw?ttl=2h", "ttl is whole seconds"},
		{"etcd://a:2379/crw?ttl=2500ms", "ttl is whole seconds"},
		{"etcd://a:2379/crw?ttl=30", "ttl is whole seconds"},
		{"etcd://" + strings.Repeat("h:1,", 65) + "h:1/crw", "at most 64"},
	} {
		_, err := cluster.ParseAddress(tt.in)
		require.Error(t, err, tt.in)
		assert.Contains(t, err.Error(), tt.says, tt.in)
		assert.NotContains(t, err.Error(), "secret", "no password in the error")
	}
}

func FuzzParseAddress(f *testing.F) {
	f.Add("etcd://ops@a:1,b:2/team/crw?ca=/x&tls=1")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := cluster.ParseAddress(s)
		if err != nil {
			return
		}
		again, err := cluster.ParseAddress(a.String())
		if err != nil {
			t.Fatalf("%q parsed to %+v, whose String %q does not parse: %v", s, a, a.String(), err)
		}
		if a.String() != again.String() {
			t.Fatalf("%q: %q then %q", s, a.String(), again.String())
		}
	})
}
