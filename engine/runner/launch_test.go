package runner_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// expecting is a journal that records, at each announced writer's withdrawal (store.Expecter),
// how many writers had been announced by then.
type expecting struct {
	store.Journal
	mu        sync.Mutex
	announced int
	waiting   int
	withdrawn []int // announced, at each withdrawal
}

func (e *expecting) Expect() func() {
	e.mu.Lock()
	e.announced++
	e.waiting++
	e.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			e.waiting--
			e.withdrawn = append(e.withdrawn, e.announced)
			e.mu.Unlock()
		})
	}
}

type expectingLease struct {
	store.Lease
	j *expecting
}

func (l expectingLease) Journal() store.Journal { return l.j }

// fanOut issues 3 waves of 8 calls at once, each wave after the last has settled.
const fanOut = `
import { agent } from "crw:agent";
export default async function main() {
  let done = 0;
  for (let w = 0; w < 3; w++) {
    const wave = [];
    for (let i = 0; i < 8; i++) wave.push(agent.call({ role: "explorer", node: "n" + i, prompt: "wave " + w + " call " + i }));
    for (const r of await Promise.all(wave)) if (r.status === "completed") done++;
  }
  return done;
}
`

// TestCallsIssuedTogetherStartTogether: the calls a script issues in one go are all announced to
// the journal before the first of them asks for its commit, so that commit can carry every
// one's intent; every announcement is withdrawn by the run's end, those of calls a pool of 4
// keeps waiting too (at once).
func TestCallsIssuedTogetherStartTogether(t *testing.T) {
	for _, pool := range []int{8, 4} {
		wf := filepath.Join(t.TempDir(), "wf.js")
		require.NoError(t, os.WriteFile(wf, []byte(fanOut), 0o600))
		st := mem.New()
		spec := &store.Spec{Schema: store.SpecSchema, Run: run, Workflow: wf, Backend: fake.Name, Pool: pool, Input: json.RawMessage("null"),
			CreatedAt: time.Now().UTC()}
		require.NoError(t, st.Create(context.Background(), spec))
		lease, err := st.Acquire(context.Background(), run)
		require.NoError(t, err)
		j := &expecting{Journal: lease.Journal()}
		h, err := replay.ReadPages(func(from uint64, limit int, fn func(*journal.Row) error) error { return j.Each(from, limit, fn) })
		require.NoError(t, err)
		end, err := runner.Run(context.Background(), runner.Config{Spec: spec, Lease: expectingLease{lease, j}, Backend: fake.New(nil, fake.NewHost("")), History: h})
		require.NoError(t, err)
		require.NoError(t, lease.Release())
		assert.Equal(t, "24", string(end.Result), "pool %d", pool)

		j.mu.Lock()
		assert.Equal(t, 24, j.announced, "pool %d: every call started is announced", pool)
		assert.Equal(t, 0, j.waiting, "pool %d: and withdrawn", pool)
		assert.Len(t, j.withdrawn, 24, "pool %d", pool)
		// A call withdraws when it asks for its first commit (or waits for a slot, or ends):
		// by then every call of its wave (8) was announced, whichever wave it is.
		for i, n := range j.withdrawn {
			assert.Zero(t, n%8, "pool %d: withdrawal %d came with %d calls announced: a wave only partly announced", pool, i, n)
		}
		j.mu.Unlock()
	}
}
