package errs_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/errs"
)

// TestAFieldErrorNamesItsFieldAsTheCallerDoes: an error about a field is invalid_request whose
// detail names the field as the engine does; errors.As finds its FieldError through wrapping;
// Named gives the detail the caller's name of the field and keeps the rest, and leaves an
// error about no field, or a field it has no name for, as it is.
func TestAFieldErrorNamesItsFieldAsTheCallerDoes(t *testing.T) {
	t.Parallel()
	cause := errors.New("the full account")
	err := errs.Field("repo", "/x", "not a folder").Wrap(cause)
	assert.EqualError(t, err, "invalid_request: repo /x: not a folder")
	assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err))

	var fe *errs.FieldError
	require.True(t, errors.As(fmt.Errorf("create: %w", err), &fe))
	assert.Equal(t, errs.FieldError{Field: "repo", Value: "/x", Problem: "not a folder"}, *fe)
	assert.Same(t, fe, errs.FieldOf(err))

	flags := func(f string) string { return map[string]string{"repo": "--repo"}[f] }
	named := errs.Named(fmt.Errorf("create: %w", err), flags)
	assert.EqualError(t, named, "invalid_request: --repo /x: not a folder")
	assert.ErrorIs(t, named, cause)
	assert.Same(t, fe, errs.FieldOf(named), "the field is kept")
	assert.EqualError(t, err, "invalid_request: repo /x: not a folder", "the engine's error is not changed")

	noValue := errs.Field("pool", "", "must be 1 or more, got %d", 0)
	assert.EqualError(t, errs.Named(noValue, func(string) string { return "--pool" }), "invalid_request: --pool: must be 1 or more, got 0")

	unnamed := errs.Field("head", "main", "no such ref")
	assert.Same(t, unnamed, errs.Named(unnamed, flags), "a field the caller has no name for")
	plain := errs.New(errs.InvalidRequest, "no run x")
	assert.Same(t, plain, errs.Named(plain, flags))
	assert.Nil(t, errs.FieldOf(plain))
	assert.False(t, errors.As(plain, &fe))
	other := errors.New("not coded")
	assert.Equal(t, other, errs.Named(other, flags))

	missing := errs.NewField(errs.CapabilityUnavailable, "backend_opts.owner", "", "none given").
		Because("start", "owner_missing", errs.NotStarted, errs.Certain).Next("give one")
	got, ok := errs.As(errs.Named(missing, func(string) string { return "owner" }))
	require.True(t, ok)
	assert.Equal(t, "owner: none given", got.Detail)
	assert.Equal(t, errs.CapabilityUnavailable, got.Code)
	assert.Equal(t, "owner_missing", got.Reason())
	assert.Equal(t, "give one", got.Diagnostic.NextAction)

	long := errs.Field("input", "", "%s", strings.Repeat("x", 2*errs.MaxDetail))
	assert.LessOrEqual(t, len(long.Detail), errs.MaxDetail+40)
	assert.LessOrEqual(t, len(errs.FieldOf(long).Problem), errs.MaxDetail+40, "bounded as a detail is")
	renamed, _ := errs.As(errs.Named(long, func(string) string { return "--input" }))
	assert.True(t, strings.HasPrefix(renamed.Detail, "--input: xxx"))
	assert.LessOrEqual(t, len(renamed.Detail), errs.MaxDetail+40)
}

// TestANextActionNamesFieldsAsTheCallerDoes: a next action that names other fields of the
// request (NextNaming) reads them by their own names until Named calls them as the caller
// does, in a copy; a field the caller has no name for keeps its own.
func TestANextActionNamesFieldsAsTheCallerDoes(t *testing.T) {
	t.Parallel()
	err := errs.New(errs.CapabilityUnavailable, "no owner").NextNaming("{backend} fake (offline), or {backend} app-server; {limits.deadline} 1h")
	assert.Equal(t, "backend fake (offline), or backend app-server; limits.deadline 1h", err.Diagnostic.NextAction)
	flags := func(f string) string { return map[string]string{"backend": "--backend"}[f] }
	got, ok := errs.As(errs.Named(fmt.Errorf("create: %w", err), flags))
	require.True(t, ok)
	assert.Equal(t, "--backend fake (offline), or --backend app-server; limits.deadline 1h", got.Diagnostic.NextAction)
	assert.Equal(t, "backend fake (offline), or backend app-server; limits.deadline 1h", err.Diagnostic.NextAction, "the engine's error is not changed")
	assert.Equal(t, "no owner", got.Detail)
}
