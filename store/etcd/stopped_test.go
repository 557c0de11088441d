package etcd_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/internal/etcdtest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/etcd"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

// holderEnv makes this test binary a holder process: it holds the run on the cluster the
// variable names and writes a row every few milliseconds, saying on stdout how each went.
const holderEnv = "CRW_ETCD_TEST_HOLDER"

func TestMain(m *testing.M) {
	if endpoint := os.Getenv(holderEnv); endpoint != "" {
		os.Exit(holder(endpoint))
	}
	os.Exit(m.Run())
}

// holder writes rows until one is refused, then says why; 2 when it cannot start.
func holder(endpoint string) int {
	ctx := context.Background()
	cli, err := etcdtest.NewClient(endpoint)
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	defer cli.Close()
	h, err := etcd.Hold(ctx, cli, "/crw", run, 2*time.Second)
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	for i := 0; ; i++ {
		seq, err := h.Journal().Write(journal.Warning{Reason: "r", Detail: fmt.Sprintf("holder %d", i)}.Row())
		if err != nil {
			fmt.Printf("refused %v\n", err)
			return 0
		}
		fmt.Println("wrote", seq)
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAHolderStoppedPastItsLeaseWritesNothingWhenContinued: a real holder process, SIGSTOPped
// until its lease has expired and another process holds the run, is continued: its next commit
// is refused (the lease was lost), and the journal has none of its rows after the new holder's.
func TestAHolderStoppedPastItsLeaseWritesNothingWhenContinued(t *testing.T) {
	c := etcdtest.Start(t, 1)
	lateHolder(t, c, c.Members[0].ClientURL,
		func(cmd *exec.Cmd) { require.NoError(t, cmd.Process.Signal(syscall.SIGSTOP)) },
		func(cmd *exec.Cmd) { require.NoError(t, cmd.Process.Signal(syscall.SIGCONT)) })
}

// TestAHolderPartitionedPastItsLeaseWritesNothingWhenHealed: a real holder process reaching the
// cluster through a proxy is cut off (every byte stalled) until its lease has expired and
// another process holds the run; when the partition heals, the commit it had sent arrives late
// and is refused, as is every later one, and the journal has none of its rows after the new
// holder's.
func TestAHolderPartitionedPastItsLeaseWritesNothingWhenHealed(t *testing.T) {
	c := etcdtest.Start(t, 1)
	p := etcdtest.NewProxy(t, strings.TrimPrefix(c.Members[0].ClientURL, "http://"))
	lateHolder(t, c, p.Addr, func(*exec.Cmd) { p.Partition() }, func(*exec.Cmd) { p.Heal() })
}

// lateHolder starts a holder process that reaches the cluster at endpoint and writes rows; cut
// makes it unheard (its lease then expires), and once another process holds the run and has
// written a row, heal lets it on: its next commit must be refused, and no row of it may follow
// the new holder's.
func lateHolder(t *testing.T, c *etcdtest.Cluster, endpoint string, cut, heal func(*exec.Cmd)) {
	cli := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+endpoint)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the holder ended")
			return l
		case <-ctx.Done():
			t.Fatal("the holder said nothing")
			return ""
		}
	}
	for range 3 {
		require.True(t, strings.HasPrefix(next(), "wrote "), "the holder writes")
	}

	owner := "/crw/runs/" + run + "/owner"
	gone := cli.Watch(ctx, owner, etcdrpc.WithFilterPut())
	cut(cmd)
	<-gone // the owner key is deleted when the unheard holder's lease expires

	h, err := etcd.Hold(ctx, cli, "/crw", run, 10*time.Second)
	require.NoError(t, err, "the run is free once the unheard holder's lease expired")
	defer h.Release(ctx)
	taken, err := h.Journal().Write(journal.Warning{Reason: "r", Detail: "new holder"}.Row())
	require.NoError(t, err)

	heal(cmd)
	var last string
	for last = next(); strings.HasPrefix(last, "wrote "); last = next() {
		// A commit that was applied before the cut may still report; none may land after taken.
	}
	assert.Contains(t, last, "refused")
	assert.Contains(t, last, store.ErrLeaseLost.Error())
	require.NoError(t, cmd.Wait())

	rows, err := h.Journal().Rows()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(rows), 4)
	for _, r := range rows[taken:] {
		t.Errorf("row %d (%s) was written after the new holder's", r.Seq, r.Detail)
	}
	assert.Equal(t, "new holder", rows[taken-1].Detail)
	for i, r := range rows[:taken-1] {
		assert.Equal(t, fmt.Sprintf("holder %d", i), r.Detail, "the unheard holder's rows, in order, each once")
	}
	keys, err := cli.Get(ctx, "/crw/runs/"+run+"/rows/", etcdrpc.WithPrefix())
	require.NoError(t, err)
	for _, kv := range keys.Kvs {
		assert.Equal(t, int64(1), kv.Version, "%s put once", kv.Key)
	}
}
