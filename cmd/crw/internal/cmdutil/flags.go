package cmdutil

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/userfile"
)

// ReadFlagValue reads a flag's JSON, @FILE or @- (from in).
func ReadFlagValue(flag, s string, in io.Reader) ([]byte, error) {
	switch {
	case s == "@-":
		data, err := userfile.ReadStream(in, userfile.MaxData)
		if err != nil {
			return nil, errs.New(errs.InvalidRequest, "%s @-: cannot read stdin: %v", flag, err)
		}
		return data, nil
	case strings.HasPrefix(s, "@"):
		data, err := userfile.Read(s[1:], userfile.MaxData)
		if err != nil {
			return nil, errs.New(errs.InvalidRequest, "%s %s: cannot read: %v", flag, s, err)
		}
		return data, nil
	}
	return []byte(s), nil
}

// WaitFlag is a --wait of the owner's commands: a duration (30s, 2m), or a number of seconds
// (30) as an owner thread may write it.
type WaitFlag time.Duration

func (w *WaitFlag) String() string { return time.Duration(*w).String() }

// Type implements pflag.Value.
func (w *WaitFlag) Type() string { return "duration" }

// Set implements pflag.Value.
func (w *WaitFlag) Set(v string) error {
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(secs) || math.IsInf(secs, 0) {
			return fmt.Errorf("%q is not a number of seconds", v)
		}
		if secs > float64(maxWait/time.Second) {
			return fmt.Errorf("%q seconds is more than %s", v, maxWait)
		}
		*w = WaitFlag(time.Duration(secs * float64(time.Second)))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is neither a number of seconds nor a duration (30s, 2m)", v)
	}
	*w = WaitFlag(d)
	return nil
}

// maxWait bounds a --wait given in seconds, where a float could pass any duration.
const maxWait = 24 * time.Hour

// CheckWait refuses a negative --wait.
func CheckWait(wait time.Duration) error {
	if wait < 0 {
		return errs.New(errs.InvalidRequest, "--wait: must not be negative, got %s", wait)
	}
	return nil
}

// AgeFlag is a duration given as Go writes one (30m, 24h) or with days (7d, 1d12h): how old
// runs are, for list --since and prune --older-than.
type AgeFlag time.Duration

// maxAge bounds an age: a hundred years, within a time.Duration.
const maxAge = 100 * 365 * 24 * time.Hour

func (a *AgeFlag) String() string {
	d := time.Duration(*a)
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// Type implements pflag.Value.
func (a *AgeFlag) Type() string { return "duration" }

// Set implements pflag.Value.
func (a *AgeFlag) Set(v string) error {
	var days time.Duration
	rest := v
	if i := strings.Index(v, "d"); i > 0 {
		n, err := strconv.ParseUint(v[:i], 10, 32)
		if err != nil || n > uint64(maxAge/(24*time.Hour)) {
			return fmt.Errorf("%q is not a duration (7d, 24h, 30m)", v)
		}
		days, rest = time.Duration(n)*24*time.Hour, v[i+1:]
	}
	var d time.Duration
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil || d < 0 {
			return fmt.Errorf("%q is not a duration (7d, 24h, 30m)", v)
		}
	} else if days == 0 && v != "0d" {
		return fmt.Errorf("%q is not a duration (7d, 24h, 30m)", v)
	}
	if days+d > maxAge {
		return fmt.Errorf("%q is more than a hundred years", v)
	}
	*a = AgeFlag(days + d)
	return nil
}
