// Package etcdtest runs real etcd clusters for tests: each member an etcd server process of its
// own on loopback (the binary .ci/install-etcd.sh builds, named by $CRW_ETCD), so a test can
// SIGKILL a member, SIGSTOP it past its peers' patience and continue it, or start it again on
// its data. A test without $CRW_ETCD is skipped, saying so; CI always sets it.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

// Env names the etcd binary the tests run.
const Env = "CRW_ETCD"

// startTimeout bounds how long a cluster may take to serve: a loaded machine's elections are
// slow, but a member that does not come up at all must fail the test, not hang it.
const startTimeout = 60 * time.Second

// Binary is the etcd binary $CRW_ETCD names; the test is skipped without one.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(Env)
	if bin == "" {
		t.Skipf("no etcd server: set %s to the binary bash .ci/install-etcd.sh prints (CI does)", Env)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s=%s: %v", Env, bin, err)
	}
	return bin
}

// Cluster is a running etcd cluster of separate processes; Start stops it when the test ends.
type Cluster struct {
	Members []*Member
	bin     string
	// Certs are what the members serve clients with, when StartTLS started them.
	Certs *Certs
}

// errExited: a member's process exited before it served.
var errExited = errors.New("its process exited")

// Member is one etcd server process of a cluster.
type Member struct {
	Name               string
	ClientURL, PeerURL string
	dir                string
	initial            string // the cluster's --initial-cluster
	certs              *Certs // clients are served over TLS, and must show a certificate of the CA
	health             *http.Client

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// Start starts a cluster of n members and waits until each serves.
func Start(t testing.TB, n int) *Cluster { return start(t, n, nil) }

// StartTLS starts a cluster of n members that serve clients over TLS with certs, and take
// only clients that show a certificate of its CA.
func StartTLS(t testing.TB, n int, certs Certs) *Cluster { return start(t, n, &certs) }

func start(t testing.TB, n int, certs *Certs) *Cluster {
	t.Helper()
	c := &Cluster{bin: Binary(t), Certs: certs}
	health := &http.Client{}
	scheme := "http://"
	if certs != nil {
		tc, err := certs.clientTLS()
		if err != nil {
			t.Fatal(err)
		}
		health.Transport = &http.Transport{TLSClientConfig: tc}
		scheme = "https://"
	}
	dir := t.TempDir()
	t.Cleanup(c.stop)
	// A member whose ports another process took between freePort and its bind exits at once:
	// the cluster is started again on other ports, in a folder of its own.
	for attempt := 1; ; attempt++ {
		err := c.startMembers(t, n, filepath.Join(dir, fmt.Sprintf("try%d", attempt)), scheme, health, certs)
		if err == nil {
			return c
		}
		c.stop()
		if attempt == 3 || !errors.Is(err, errExited) {
			t.Fatal(err)
		}
		t.Logf("starting the etcd cluster again: %v", err)
	}
}

// startMembers starts n members in dir and waits until each serves.
func (c *Cluster) startMembers(t testing.TB, n int, dir, scheme string, health *http.Client, certs *Certs) error {
	c.Members = nil
	var peers []string
	for i := range n {
		client, peer := freePort(t), freePort(t)
		m := &Member{Name: fmt.Sprintf("m%d", i), ClientURL: scheme + client, PeerURL: "http://" + peer,
			dir: filepath.Join(dir, fmt.Sprintf("m%d", i)), certs: certs, health: health}
		c.Members = append(c.Members, m)
		peers = append(peers, m.Name+"="+m.PeerURL)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, m := range c.Members {
		m.initial = strings.Join(peers, ",")
		if err := m.start(c.bin, "new"); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for _, m := range c.Members {
		if err := m.WaitHealthy(ctx); err != nil {
			return fmt.Errorf("etcd member %s did not come up: %w (its log: %s)", m.Name, err, m.logPath())
		}
	}
	return nil
}

// freePort is a loopback address no listener holds right now, below the ports the kernel
// gives connections of their own (ip_local_port_range): another process's client socket
// cannot take it before the member binds it, only another test's listener, which is rare.
func freePort(t testing.TB) string {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				low = n
			}
		}
	}
	for range 100 {
		port := 10000 + rand.IntN(low-10000)
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			addr := l.Addr().String()
			l.Close()
			return addr
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (m *Member) logPath() string { return m.dir + ".log" }

// start runs the member's process on its data folder; state is new for a fresh cluster,
// existing for a member started again.
func (m *Member) start(bin, state string) error {
	log, err := os.OpenFile(m.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(bin,
		"--name", m.Name, "--data-dir", m.dir,
		"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL,
		"--initial-cluster", m.initial, "--initial-cluster-state", state, "--initial-cluster-token", "crw-test",
		// Raft timers shorter than etcd's (a lost leader is replaced in a few seconds, not ten)
		// but not so short that a member a loaded machine starves for a second loses its
		// leader: a test that is not about an election must not see one.
		"--heartbeat-interval", "250", "--election-timeout", "2500",
		"--log-level", "warn")
	if m.certs != nil {
		cmd.Args = append(cmd.Args, "--cert-file", m.certs.ServerCert, "--key-file", m.certs.ServerKey,
			"--trusted-ca-file", m.certs.CA, "--client-cert-auth")
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no member outlives a killed test
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("etcd member %s: %w", m.Name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	m.mu.Lock()
	m.cmd, m.done = cmd, done
	m.mu.Unlock()
	return nil
}

// WaitHealthy waits until the member says it is healthy: it has a leader and serves reads.
func (m *Member) WaitHealthy(ctx context.Context) error {
	for {
		m.mu.Lock()
		done := m.done
		m.mu.Unlock()
		select {
		case <-done:
			return errExited
		default:
		}
		if healthy(ctx, m.health, m.ClientURL) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			return errExited
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func healthy(ctx context.Context, client *http.Client, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var body [64]byte
	n, _ := resp.Body.Read(body[:])
	return resp.StatusCode == http.StatusOK && strings.Contains(string(body[:n]), `"health":"true"`)
}

// Kill SIGKILLs the member and waits for its process to end.
func (m *Member) Kill() {
	m.signal(syscall.SIGKILL)
	m.mu.Lock()
	done := m.done
	m.mu.Unlock()
	if done != nil {
		<-done
	}
}

// Stop SIGSTOPs the member: it answers nothing, and its peers take it for gone.
func (m *Member) Stop() { m.signal(syscall.SIGSTOP) }

// Cont SIGCONTs a stopped member.
func (m *Member) Cont() { m.signal(syscall.SIGCONT) }

func (m *Member) signal(sig syscall.Signal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil && m.cmd.Process != nil {
		_ = m.cmd.Process.Signal(sig)
	}
}

// Restart starts a killed member again on its data and waits until it serves.
func (c *Cluster) Restart(ctx context.Context, m *Member) error {
	if err := m.start(c.bin, "existing"); err != nil {
		return err
	}
	return m.WaitHealthy(ctx)
}

// Endpoints are the members' client URLs.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, m.ClientURL)
	}
	return eps
}

// Client is a client of the whole cluster as the store has one (etcdrpc), closed when the
// test ends.
func (c *Cluster) Client(t testing.TB) *etcdrpc.Client {
	t.Helper()
	cli, err := NewClient(c.Endpoints()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// AdminClient is a client of the whole cluster with etcd's own Go client, for what the store
// never does (a member's status, users, compaction), closed when the test ends.
func (c *Cluster) AdminClient(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := NewAdminClient(c.Endpoints()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// EnableAuth turns etcd's auth on, with its root user, whose password is password: from then
// on a client without a user is refused.
func (c *Cluster) EnableAuth(t testing.TB, password string) {
	t.Helper()
	admin := c.AdminClient(t)
	ctx := context.Background()
	for _, step := range []func() error{
		func() error { _, err := admin.UserAdd(ctx, "root", password); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
}

// Leader is the member that leads the cluster now, as the members that answer say.
func (c *Cluster) Leader(ctx context.Context, cli *clientv3.Client) (*Member, error) {
	ids := map[uint64]*Member{}
	var leader uint64
	for _, m := range c.Members {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cli.Status(ctx, m.ClientURL)
		cancel()
		if err != nil {
			continue
		}
		ids[st.Header.MemberId] = m
		if st.Leader != 0 && st.Header.MemberId == st.Leader {
			leader = st.Leader
		}
	}
	if m := ids[leader]; m != nil {
		return m, nil
	}
	return nil, errors.New("no member that answers says it leads")
}

// WaitLeader waits until a member other than gone leads the cluster (gone nil: any member).
func (c *Cluster) WaitLeader(ctx context.Context, cli *clientv3.Client, gone *Member) (*Member, error) {
	for {
		if m, err := c.Leader(ctx, cli); err == nil && m != gone {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no new leader: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// NewClient is a client of these endpoints as the store has one.
func NewClient(endpoints ...string) (*etcdrpc.Client, error) {
	return etcdrpc.New(etcdrpc.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
}

// NewAdminClient is etcd's own Go client of these endpoints, logging nothing: a test says what
// failed.
func NewAdminClient(endpoints ...string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

func (c *Cluster) stop() {
	for _, m := range c.Members {
		m.Kill()
	}
}
