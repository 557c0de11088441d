package jsutil_test

import (
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/runtime/jsutil"
)

// TestPromiseHandled: a promise awaited, then'd or passed to Promise.all, before or after it
// settled, is handled; one nobody observed is not.
func TestPromiseHandled(t *testing.T) {
	t.Parallel()
	rt := goja.New()
	made := map[string]*goja.Promise{}
	resolvers := map[string]func(any) error{}
	require.NoError(t, rt.Set("make", func(name string) *goja.Promise {
		p, resolve, _ := rt.NewPromise()
		made[name], resolvers[name] = p, resolve
		return p
	}))
	require.NoError(t, rt.Set("settle", func(name string) { _ = resolvers[name](1) }))
	_, err := rt.RunString(`
		const awaited = make("awaited"), thened = make("thened"), all = make("all"), late = make("late");
		make("ignored"); make("ignoredSettled");
		settle("ignoredSettled"); settle("late");
		(async () => { await awaited; })();
		thened.then(() => {});
		Promise.all([all]);
		(async () => { await late; })();
	`)
	require.NoError(t, err)
	for name, want := range map[string]bool{"awaited": true, "thened": true, "all": true, "late": true, "ignored": false, "ignoredSettled": false} {
		got, known := jsutil.PromiseHandled(made[name])
		require.True(t, known, "this goja's Promise no longer records whether it was handled")
		assert.Equal(t, want, got, name)
	}
}
