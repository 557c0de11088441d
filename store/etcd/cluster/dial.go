package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

// dialTimeout bounds how long reaching the cluster may take before a command says it cannot.
const dialTimeout = 5 * time.Second

// Dial is a client of the cluster at a: over TLS when it says so, as its user with the
// password in $CRW_ETCD_PASSWORD. The client is checked by one request, so a wrong address,
// certificate or password is said here, naming what is wrong, not at the first read.
func Dial(ctx context.Context, a Address) (*etcdrpc.Client, error) {
	// A member that stalls (a partition that drops no packet, a member SIGSTOPped) is left
	// for another once a request to it has gone unanswered for the client's RequestTimeout,
	// and a watch on it once a probe of it has (etcdrpc.Config).
	cfg := etcdrpc.Config{Endpoints: a.Endpoints, DialTimeout: dialTimeout}
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
	cli, err := etcdrpc.New(cfg)
	if err != nil {
		return nil, errs.New(errs.RunUnavailable, "%s: the etcd cluster cannot be reached: %v", a, err).Wrap(err)
	}
	check, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if _, err := cli.Get(check, "health-check-of-crw", etcdrpc.WithCountOnly()); err != nil {
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
