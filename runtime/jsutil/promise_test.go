package jsutil_test

import (
	"fmt"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPromiseHandled: a promise awaited, then'd or passed to Promise.all, before or after it
// settled, is handled (goja's Promise.Handled, third_party/goja/crw_own.go); one nobody
// observed is not.
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
		assert.Equal(t, want, made[name].Handled(), name)
	}
}

// TestGoPromiseSettlesAsNewPromise: a promise of NewGoPromise settles as one of NewPromise does
// whatever Go settles it with (a value, a thenable, itself, a then that throws, a second
// settling), and its jobs run before resolve returns.
func TestGoPromiseSettlesAsNewPromise(t *testing.T) {
	t.Parallel()
	type settle func(resolve, reject func(any) error, rt *goja.Runtime, p *goja.Promise) []error
	value := func(v string) func(*goja.Runtime) any {
		return func(rt *goja.Runtime) any { v, _ := rt.RunString(v); return v }
	}
	cases := map[string]settle{
		"value": func(res, _ func(any) error, rt *goja.Runtime, _ *goja.Promise) []error {
			return []error{res(value(`({ n: 1 })`)(rt))}
		},
		"thenable": func(res, _ func(any) error, rt *goja.Runtime, _ *goja.Promise) []error {
			return []error{res(value(`({ then(ok) { log.push("then called"); ok(7); } })`)(rt))}
		},
		"then throws": func(res, _ func(any) error, rt *goja.Runtime, _ *goja.Promise) []error {
			return []error{res(value(`({ get then() { throw "no then"; } })`)(rt))}
		},
		"itself": func(res, _ func(any) error, _ *goja.Runtime, p *goja.Promise) []error {
			return []error{res(p)}
		},
		"rejected": func(_, rej func(any) error, _ *goja.Runtime, _ *goja.Promise) []error {
			return []error{rej("why")}
		},
		"twice": func(res, rej func(any) error, _ *goja.Runtime, _ *goja.Promise) []error {
			return []error{res(1), res(2), rej(3)}
		},
		"rejected first": func(res, rej func(any) error, _ *goja.Runtime, _ *goja.Promise) []error {
			return []error{rej(4), res(5)}
		},
	}
	run := func(newPromise func(rt *goja.Runtime) (*goja.Promise, func(any) error, func(any) error), how settle) string {
		rt := goja.New()
		_, err := rt.RunString(`var log = [];`)
		require.NoError(t, err)
		p, resolve, reject := newPromise(rt)
		require.NoError(t, rt.Set("p", p))
		_, err = rt.RunString(`p.then(v => log.push("fulfilled " + JSON.stringify(v)), e => log.push("rejected " + String(e)));`)
		require.NoError(t, err)
		for _, err := range how(resolve, reject, rt, p) {
			require.NoError(t, err)
		}
		out, err := rt.RunString(`log.join("; ")`)
		require.NoError(t, err)
		return fmt.Sprintf("%s (state %d, result %v)", out, p.State(), p.Result())
	}
	written := map[string]string{
		"value":       `fulfilled {"n":1} (state 1, result [object Object])`,
		"thenable":    `then called; fulfilled 7 (state 1, result 7)`,
		"then throws": `rejected no then (state 2, result no then)`,
		"itself":      `rejected TypeError: Promise self-resolution (state 2, result TypeError: Promise self-resolution)`,
		"twice":       `fulfilled 1 (state 1, result 1)`,
	}
	for name, how := range cases {
		want := run(func(rt *goja.Runtime) (*goja.Promise, func(any) error, func(any) error) { return rt.NewPromise() }, how)
		got := run(func(rt *goja.Runtime) (*goja.Promise, func(any) error, func(any) error) { return rt.NewGoPromise() }, how)
		assert.Equal(t, want, got, name)
		assert.NotEmpty(t, got, "%s: nothing settled before resolve returned", name)
		if w, ok := written[name]; ok {
			assert.Equal(t, w, got, name)
		}
	}
}
