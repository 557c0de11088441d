package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// LastRun is the name that stands for the newest run of the state folder wherever a run id is
// taken.
const LastRun = "last"

// noRunNext is what to do about a run a command names that is not there: as the store says of
// a run id it does not hold, so that every way of naming no run reads alike.
const noRunNext = "crw flow list names the runs there; --state DIR (or CRW_STATE) names another folder"

// ResolveRun is the run an argument names: a run id, "last" (the newest run), or a unique
// prefix of a run id or of its random part (20261202-0113 or 3a9707).
func ResolveRun(ctx context.Context, st store.Store, root, ref string) (string, error) {
	if journal.ValidRunID(ref) {
		return ref, nil
	}
	ids, err := st.List(ctx)
	if err != nil {
		return "", err
	}
	if ref == LastRun {
		if len(ids) == 0 {
			return "", errs.New(errs.InvalidRequest, "last: there is no run in the state folder %s", root).Wrap(store.ErrNoRun).Next(noRunNext)
		}
		return slices.Max(ids), nil
	}
	if ref == "" || strings.ContainsAny(ref, "/\\\x00") || len(ref) > 64 {
		return "", errs.New(errs.InvalidRequest, "%q is not a run id (like 20261130-052301-a1b2c3), a prefix of one, or %s", ref, LastRun)
	}
	var found []string
	for _, id := range ids {
		if strings.HasPrefix(id, ref) || strings.HasPrefix(id[strings.LastIndexByte(id, '-')+1:], ref) {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 0:
		return "", errs.New(errs.InvalidRequest, "no run %s in the state folder %s", ref, root).Wrap(store.ErrNoRun).Next(noRunNext)
	case 1:
		return found[0], nil
	}
	shown := found
	if len(shown) > 5 {
		shown = shown[:5]
	}
	more := ""
	if len(found) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(found)-len(shown))
	}
	return "", errs.New(errs.InvalidRequest, "%q names %d runs: %s%s; give more of the id", ref, len(found), strings.Join(shown, ", "), more)
}
