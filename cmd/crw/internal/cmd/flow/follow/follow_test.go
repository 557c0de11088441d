package follow

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
)

func TestNewCmdFollow(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdFollow, "20260101-000000-abcdef")
	require.NoError(t, err)
	assert.Equal(t, "20260101-000000-abcdef", opts.Run)

	_, err = cmdtest.Parse(t, e, NewCmdFollow)
	assert.EqualError(t, err, "accepts 1 arg(s), received 0")
}

func TestFollowAnEndedRunPrintsItsEnd(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	require.NoError(t, runFollow(&Options{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}))
	assert.Equal(t, `{"v":"hi"}`+"\n", e.Out.String(), "the run's result")
	assert.Contains(t, e.ErrOut.String(), "call c1 ", "its last process's call, though it ended before the follow began")
	assert.True(t, e.Factory.Outcome.RunOutput, "its errors take the shape of a run's end")
	assert.Equal(t, end.Run, e.Factory.Outcome.Run)

	e.Out.Reset()
	e.JSON = true
	require.NoError(t, runFollow(&Options{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}}))
	assert.Equal(t, `{"run":"`+end.Run+`","status":"completed","result":{"v":"hi"},"error":null,"calls":{"completed":1}}`+"\n", e.Out.String())
}

func TestFollowAFailedRunExits1(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, "export default async function main() { throw new Error(\"no\"); }\n", "")
	err := runFollow(&Options{Common: e.Common(), RunArg: cmdutil.RunArg{Run: end.Run}})
	assert.Equal(t, cmdutil.ExitError{Code: cmdutil.ExitFailed}, err)
	assert.Contains(t, e.ErrOut.String(), "run "+end.Run+" failed; see crw flow show "+end.Run+"\n")
	assert.Empty(t, e.Out.String())
}

// TestAFollowOfAQueuedRunSaysWhatTakesIt: a follow of a run no process has taken yet waits for
// one, and says what takes it, as crw flow status does.
func TestAFollowOfAQueuedRunSaysWhatTakesIt(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	svc, err := e.Factory.Service()
	require.NoError(t, err)
	run, err := svc.Create(context.Background(), engine.CreateOptions{Workflow: e.File(t, "wf.js", cmdtest.OneCall), Backend: fake.Name, KeepCode: true})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	said := &untilWriter{want: "queued: ", then: cancel}
	c := e.Factory.Common(ctx)
	ios := *c.IO
	ios.ErrOut = said
	c.IO = &ios
	err = runFollow(&Options{Common: c, RunArg: cmdutil.RunArg{Run: run}})
	require.ErrorIs(t, err, context.Canceled, "it waits for a process until it is stopped")
	assert.Equal(t, "run "+run+" followed\nqueued: 0 in flight, no call ended yet; no process has run it yet: a worker (crw worker) takes it, or crw flow resume "+run+" runs it here\n", said.String())
}

// untilWriter keeps what is written to it and calls then once it holds want.
type untilWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	then func()
}

func (w *untilWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.then()
	}
	return n, err
}

func (w *untilWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
