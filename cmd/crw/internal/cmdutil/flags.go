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
