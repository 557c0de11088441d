package journal_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
)

// filled is v with every field set to a value of its own (strings named after their path,
// numbers counted up, every pointer, slice and map given one element), so a field a writer or
// reader drops, or two fields swapped, show.
func filled(t *testing.T, v reflect.Value, path string, n *int) {
	t.Helper()
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("%s-%d", path, *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Uint, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Int, reflect.Int32, reflect.Int64:
		if v.Type() == reflect.TypeOf(time.Duration(0)) {
			v.SetInt(int64(*n) * int64(time.Second))
		} else {
			v.SetInt(int64(*n))
		}
	case reflect.Ptr:
		p := reflect.New(v.Type().Elem())
		filled(t, p.Elem(), path, n)
		v.Set(p)
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage(nil)) {
			v.SetBytes([]byte(fmt.Sprintf(`{"%s":%d}`, path, *n)))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		filled(t, s.Index(0), path+"[0]", n)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		filled(t, e, path+"[k]", n)
		m.SetMapIndex(reflect.ValueOf(fmt.Sprintf("%s-k%d", path, *n)), e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 5, 6, 0, *n, 0, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				filled(t, v.Field(i), path+"."+v.Type().Field(i).Name, n)
			}
		}
	default:
		t.Fatalf("%s: no filler for %s", path, v.Type())
	}
}

// TestTypedRowsReadBack: every typed row kind, each of its fields set, read back through its
// reader from the row its Row() writes, and from that row encoded and decoded as the journal
// stores it, is what it was.
func TestTypedRowsReadBack(t *testing.T) {
	type kind struct {
		value any
		read  func(*journal.Row) any
	}
	kinds := []kind{
		{journal.Warning{}, func(r *journal.Row) any { return r.AsWarning() }},
		{journal.End{}, func(r *journal.Row) any { return r.AsEnd() }},
		{journal.Completed{}, func(r *journal.Row) any { return r.AsCompleted() }},
		{journal.DecisionRequested{}, func(r *journal.Row) any { return r.AsDecisionRequested() }},
		{journal.DecisionAnswered{}, func(r *journal.Row) any { return r.AsDecisionAnswered() }},
		{journal.Reconciled{}, func(r *journal.Row) any { return r.AsReconciled() }},
		{journal.Escalation{}, func(r *journal.Row) any { return r.AsEscalation() }},
		{journal.InterruptRequested{}, func(r *journal.Row) any { return r.AsInterruptRequested() }},
		{journal.ThreadStarted{}, func(r *journal.Row) any { return r.AsThreadStarted() }},
		{journal.TurnStarted{}, func(r *journal.Row) any { return r.AsTurnStarted() }},
		{journal.CheckpointStarted{}, func(r *journal.Row) any { return r.AsCheckpointStarted() }},
		{journal.AttemptLost{}, func(r *journal.Row) any { return r.AsAttemptLost() }},
		{journal.CommitResult{}, func(r *journal.Row) any { return r.AsCommitResult() }},
		{journal.Prepared{}, func(r *journal.Row) any { return r.AsPrepared() }},
		{journal.Started{}, func(r *journal.Row) any { return r.AsStarted() }},
		{journal.Ended{}, func(r *journal.Row) any { return r.AsEnded() }},
		{journal.Commit{}, func(r *journal.Row) any { return r.AsCommit() }},
		{journal.WorkspacePlaced{}, func(r *journal.Row) any { return r.AsWorkspacePlaced() }},
		{journal.TierStep{}, func(r *journal.Row) any { return r.AsTierStep() }},
		{journal.ResumeChanged{}, func(r *journal.Row) any { return r.AsResumeChanged() }},
	}
	for _, k := range kinds {
		typ := reflect.TypeOf(k.value)
		t.Run(typ.Name(), func(t *testing.T) {
			v := reflect.New(typ).Elem()
			n := 0
			filled(t, v, typ.Name(), &n)
			want := v.Interface()
			row := v.MethodByName("Row").Call(nil)[0].Interface().(*journal.Row)
			if typ == reflect.TypeOf(journal.End{}) {
				require.Equal(t, want.(journal.End).Type, row.Type)
			}
			assert.Equal(t, want, k.read(row), "read from the row Row() writes")

			row.Seq = 1
			data, err := json.Marshal(row)
			require.NoError(t, err)
			var back journal.Row
			require.NoError(t, journal.DecodeInto(data, &back, 1), "%s", data)
			assert.Equal(t, want, k.read(&back), "read from the row as stored")
		})
	}
}
