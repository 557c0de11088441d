package ops

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/userfile"
)

// ShadowOptions are crw flow shadow's: the script, the recorded run (a run of the state folder,
// or a trace file), the lib folders, the limits of a trace's shadow (each nil for its default),
// whether a trace's run had no repository, and where the script's console goes.
type ShadowOptions struct {
	Script, Run, Trace string
	LibDirs            []string
	Limits             engine.CreateLimits
	NoRepo             bool
	Log                io.Writer
}

// CheckShadow refuses what no shadow takes, before the run it names is looked for: both a run
// and a trace or neither, and a trace's options (limits, no repository) with a run.
func (o ShadowOptions) CheckShadow() error {
	switch {
	case (o.Run == "") == (o.Trace == ""):
		return errs.NewNaming(errs.InvalidRequest, "give exactly one of {run} RUN and {trace} FILE")
	case o.Limits != engine.CreateLimits{} && o.Run != "":
		return errs.New(errs.InvalidRequest, "limits are given to the shadow of a trace: a run's shadow runs within the limits the run recorded")
	case o.NoRepo && o.Run != "":
		return errs.NewNaming(errs.InvalidRequest, "{no_repo} is for the shadow of a trace: a run's shadow knows whether the run has a repository")
	}
	return nil
}

// Shadow replays a script against a recorded run with no backend (crw flow shadow).
func Shadow(ctx context.Context, svc *engine.Service, o ShadowOptions) (*shadow.Report, error) {
	if err := o.CheckShadow(); err != nil {
		return nil, err
	}
	var limits *store.Limits
	switch checked, err := o.Limits.Check(); {
	case err != nil:
		return nil, err
	case o.Run == "":
		limits = &checked
	}
	if st, err := os.Stat(o.Script); err != nil || st.IsDir() {
		return nil, errs.New(errs.InvalidRequest, "script %s: not a readable file", o.Script)
	}
	var libDirs []string
	for _, d := range o.LibDirs {
		abs, _ := filepath.Abs(d)
		libDirs = append(libDirs, abs)
	}
	opts := shadow.Options{Script: o.Script, LibDirs: libDirs, Limits: limits, NoRepository: o.NoRepo, Log: o.Log}
	if o.Run == "" {
		// The script compiles while the trace is read (a run's journal: Service.Shadow).
		shadow.Warm(opts)
		f, err := userfile.Open(o.Trace)
		if err != nil {
			return nil, errs.Field("trace", o.Trace, "%v", err)
		}
		defer f.Close() // the History reads again the rows of the calls it let go
		trace, err := journal.OpenTrace(f)
		if err != nil {
			return nil, errs.Field("trace", o.Trace, "%v", err)
		}
		h, traceErr, err := shadow.ReadTrace(trace, replay.KeptBudget)
		switch {
		case traceErr != nil:
			return nil, errs.Field("trace", o.Trace, "%v", traceErr)
		case err != nil:
			return nil, err
		case o.NoRepo && trace.Committed():
			return nil, errs.NewNaming(errs.InvalidRequest, "{no_repo} is given, but the trace's run committed (its rows hold crw.commit's): it had a repository")
		}
		opts.History, opts.Trace = h, trace
	}
	rep, err := svc.Shadow(ctx, o.Run, opts)
	var traceErr *journal.TraceError
	if o.Run == "" && errors.As(err, &traceErr) {
		// The trace changed while the shadow read its calls again: said of the file.
		return nil, errs.Field("trace", o.Trace, "%v", traceErr)
	}
	return rep, err
}
