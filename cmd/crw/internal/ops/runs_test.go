package ops

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

func TestARunIsNamedByItsIDAPrefixOrLast(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := mem.New()
	for _, id := range []string{"20261201-100000-aaaaaa", "20261202-090000-abc123", "20261202-091500-fedcba"} {
		require.NoError(t, st.Create(ctx, &store.Spec{Schema: store.SpecSchema, Run: id, Input: []byte("null"), Pool: 1}))
	}
	for ref, want := range map[string]string{
		"20261202-090000-abc123": "20261202-090000-abc123",
		"last":                   "20261202-091500-fedcba",
		"20261201":               "20261201-100000-aaaaaa",
		"abc":                    "20261202-090000-abc123",
		"fed":                    "20261202-091500-fedcba",
		"20261202-0915":          "20261202-091500-fedcba",
	} {
		got, err := ResolveRun(ctx, st, "/state", ref)
		require.NoError(t, err, ref)
		assert.Equal(t, want, got, ref)
	}
	for ref, msg := range map[string]string{
		"20261202": `"20261202" names 2 runs: 20261202-090000-abc123, 20261202-091500-fedcba; give more of the id`,
		"a":        `"a" names 2 runs`,
		"zzz":      "no run zzz in the state folder /state",
		"../x":     `"../x" is not a run id`,
	} {
		_, err := ResolveRun(ctx, st, "/state", ref)
		assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err), ref)
		assert.ErrorContains(t, err, msg, ref)
	}
	_, err := ResolveRun(ctx, mem.New(), "/state", "last")
	assert.ErrorContains(t, err, "there is no run in the state folder /state")
}
