package cmdutil_test

import (
	"testing"
	"time"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
)

func TestAgeFlag(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"7d": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour, "24h": 24 * time.Hour, "30m": 30 * time.Minute,
		"0": 0, "0d": 0, "1d30m": 24*time.Hour + 30*time.Minute,
	} {
		var a cmdutil.AgeFlag
		if err := a.Set(in); err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if time.Duration(a) != want {
			t.Errorf("%q: %v, want %v", in, time.Duration(a), want)
		}
	}
	for _, in := range []string{"d", "7", "-1d", "7dd", "1.5d", "7d-1h", "40000d", "x7d", ""} {
		var a cmdutil.AgeFlag
		if err := a.Set(in); err == nil {
			t.Errorf("%q: accepted as %v", in, time.Duration(a))
		}
	}
	a := cmdutil.AgeFlag(14 * 24 * time.Hour)
	if a.String() != "14d" {
		t.Errorf("14 days print as %s", a.String())
	}
}
