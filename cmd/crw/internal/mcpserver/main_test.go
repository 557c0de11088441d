package mcpserver_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cli"
	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver"
	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/mcptest"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/appserver"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/store/local"
)

// TestMain makes the test binary double as crw for the run processes start and resume launch
// (crw flow _exec RUN, started as the running binary).
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "flow" && os.Args[2] == "_exec" {
		os.Exit(cli.Main(backends()))
	}
	// Under -race every run process would sleep a second at exit.
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
	os.Exit(m.Run())
}

func backends() *backend.Registry {
	return backend.NewRegistry(fake.Descriptor(), appserver.Descriptor(), session.Descriptor(session.Hosts{FindCodex: codex.FindCodex}))
}

// rig is a server on a state folder of its own and the SDK's client on it, in memory.
type rig struct {
	*mcptest.Client
	ctx   context.Context
	state string
	srv   *mcpserver.Server
}

func newRig(t *testing.T) *rig {
	t.Helper()
	return newRigOn(t, filepath.Join(t.TempDir(), "state"), "crw-test")
}

// newRigOn connects a client named name to a new server on the state folder state.
func newRigOn(t testing.TB, state, name string) *rig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	srv, err := mcpserver.New(mcpserver.Options{State: state, Backends: backends(), Version: "test"})
	require.NoError(t, err)
	// The server's stdio transport, on pipes.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss, err := srv.MCP().Connect(ctx, srv.Stdio(ctx, inR, outW), nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	c := mcptest.Connect(t, ctx, name, &mcp.IOTransport{Reader: outR, Writer: inW})
	// The runs the test started go on in processes of their own: the state folder is removed
	// once none of them holds its run any more.
	t.Cleanup(func() { waitRunsLetGo(t, state) })
	return &rig{Client: c, ctx: ctx, state: state, srv: srv}
}

// waitRunsLetGo waits until no process holds or starts a run of the state folder (a minute
// at most: a test that leaves one running is told so by the folder's removal).
func waitRunsLetGo(t testing.TB, state string) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir(filepath.Join(state, "flow"))
		live := false
		for _, e := range entries {
			live = live || local.Live(state, e.Name())
		}
		if !live {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
