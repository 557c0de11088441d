package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/crw-dev/crw/errs"
)

// dialTimeout bounds how long reaching the cluster may take before a command says it cannot.
const dialTimeout = 5 * time.Second

// Dial is a client of the cluster at a: over TLS when it says so, as its user with the
// password in $CRW_ETCD_PASSWORD. The client is checked by one request, so a wrong address,
// certificate or password is said here, naming what is wrong, not at the first read.
func Dial(ctx context.Context, a Address) (*clientv3.Client, error) {
	// Keepalive pings find a connection that stalls (a partition that drops no packet, a member
	// SIGSTOPped) and move the client to another member; etcd takes pings no oftener than 5 s.
	cfg := clientv3.Config{Endpoints: a.Endpoints, DialTimeout: dialTimeout, Logger: zap.NewNop(),
		DialKeepAliveTime: 5 * time.Second, DialKeepAliveTimeout: 3 * time.Second}
	if a.TLS {
		tc, err := tlsConfig(a)
		if err != nil {
			return nil, err
		}
		cfg.TLS = tc
	}
	if a.User != "" {
		password, ok := os.LookupEnv(PasswordEnv)
		if !ok {
			return nil, errs.New(errs.InvalidRequest, "%s names the etcd user %s: give the password in $%s", a, a.User, PasswordEnv)
		}
		cfg.Username, cfg.Password = a.User, password
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, errs.New(errs.RunUnavailable, "%s: the etcd cluster cannot be reached", a).Wrap(err)
	}
	check, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if _, err := cli.Get(check, "health-check-of-crw", clientv3.WithCountOnly()); err != nil {
		cli.Close()
		return nil, errs.New(errs.RunUnavailable, "%s: the etcd cluster did not answer: %v", a, err).Wrap(err)
	}
	return cli, nil
}

// tlsConfig is the TLS a's members are reached with.
func tlsConfig(a Address) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if a.CA != "" {
		pem, err := os.ReadFile(a.CA)
		if err != nil {
			return nil, errs.New(errs.InvalidRequest, "%s: the CA file %s cannot be read: %v", a, a.CA, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errs.New(errs.InvalidRequest, "%s: the CA file %s holds no PEM certificate", a, a.CA)
		}
		tc.RootCAs = pool
	}
	if a.Cert != "" {
		pair, err := tls.LoadX509KeyPair(a.Cert, a.Key)
		if err != nil {
			return nil, errs.New(errs.InvalidRequest, "%s: the client certificate %s with its key %s: %v", a, a.Cert, a.Key, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}
