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

// expecting is a journal that says, at each commit asked for, how many writers were announced
// (store.Expecter) and how many of those had not asked yet.
type expecting struct {
	store.Journal
	mu        sync.Mutex
	announced int
	waiting   int
	syncs     [][2]int // announced, still waiting: at each Sync of a seq not yet durable
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
			e.mu.Unlock()
		})
	}
}

func (e *expecting) Sync(seq uint64) error {
	if seq > e.DurableSeq() {
		e.mu.Lock()
		e.syncs = append(e.syncs, [2]int{e.announced, e.waiting})
		e.mu.Unlock()
	}
	return e.Journal.Sync(seq)
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
// keeps waiting too.
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
		// The first commit each wave asks for: every call of the wave the pool admits at
		// once was announced by then (8 per wave).
		for w := 1; w <= 3; w++ {
			first := -1
			for i, s := range j.syncs {
				if s[0] >= 8*w {
					first = i
					break
				}
			}
			require.NotEqual(t, -1, first, "pool %d: wave %d asked for no commit", pool, w)
			assert.GreaterOrEqual(t, j.syncs[first][0], 8*w, "pool %d: wave %d", pool, w)
			if first > 0 {
				assert.LessOrEqual(t, j.syncs[first-1][0], 8*(w-1), "pool %d: a commit asked for while wave %d was only partly announced", pool, w)
			}
		}
		j.mu.Unlock()
	}
}
