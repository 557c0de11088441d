package backend_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/errs"
)

type nothing struct{ name string }

func (n nothing) Name() string { return n.name }
func (nothing) Run(context.Context, backend.Turn, backend.Recorder) backend.Outcome {
	return backend.Outcome{}
}
func (nothing) Done(backend.Call, backend.Thread) {}
func (nothing) Close() error                      { return nil }

func registry() *backend.Registry {
	open := func(name string) func(backend.Config) (backend.Backend, error) {
		return func(backend.Config) (backend.Backend, error) { return nothing{name}, nil }
	}
	return backend.NewRegistry(
		backend.Descriptor{Name: "one", Options: []backend.Option{{Name: "answers"}}, Open: open("one"),
			Prepare: func(o map[string]string) (map[string]string, error) {
				if o["answers"] == "bad" {
					return nil, errs.Field(backend.OptionField("answers"), "bad", "no such file")
				}
				return map[string]string{"answers": "/abs/" + o["answers"]}, nil
			}},
		backend.Descriptor{Name: "two", Options: []backend.Option{{Name: "codex"}, {Name: "answers"}}, Open: open("two")},
		backend.Descriptor{Name: "three", Open: open("three")},
	)
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	r := registry()
	assert.Equal(t, []string{"one", "three", "two"}, r.Names())
	assert.Equal(t, []backend.Option{{Name: "answers"}, {Name: "codex"}}, r.Options(), "each option once")

	got, err := r.Prepare("one", map[string]string{"answers": "a.json"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"answers": "/abs/a.json"}, got, "what Prepare returns is recorded")
	_, err = r.Prepare("one", map[string]string{"answers": "bad"})
	assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err))

	_, err = r.Prepare("three", map[string]string{"codex": "/bin/codex"})
	assert.EqualError(t, err, "invalid_request: backend_opts.codex: an option of backend two, not of backend three")
	assert.Equal(t, "backend_opts.codex", errs.FieldOf(err).Field)
	_, err = r.Prepare("three", map[string]string{"answers": "a.json"})
	assert.EqualError(t, err, "invalid_request: backend_opts.answers: an option of backend one or two, not of backend three")
	var e *errs.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "backend one or backend two, which take it; else leave it out", e.Diagnostic.NextAction, "the backends that take it, first")

	_, err = r.Prepare("nope", nil)
	assert.EqualError(t, err, `invalid_request: backend "nope": not a backend of this build (one of one, three, two)`)
	assert.Equal(t, "backend", errs.FieldOf(err).Field)
	_, err = r.Open("nope", backend.Config{})
	assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err))
	b, err := r.Open("two", backend.Config{})
	require.NoError(t, err)
	assert.Equal(t, "two", b.Name())
}

func TestRegistryRefusesAMistakeOfTheBuild(t *testing.T) {
	t.Parallel()
	d := backend.Descriptor{Name: "x", Open: func(backend.Config) (backend.Backend, error) { return nothing{"x"}, nil }}
	assert.Panics(t, func() { backend.NewRegistry(d, d) }, "a name twice")
	assert.Panics(t, func() { backend.NewRegistry(backend.Descriptor{Name: "y"}) }, "no Open")
}
