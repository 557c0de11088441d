package show

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/htmlview"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/userfile"
)

// rewriteEvery is how often --follow writes the page again.
const rewriteEvery = 2 * time.Second

// showHTML writes the HTML page of a run (or a trace), once or, with follow, until it ends.
func showHTML(opts *Options) error {
	mode, err := cmdutil.ExportMode(opts.Mode)
	if err != nil {
		return err
	}
	switch {
	case opts.Trace != "" && len(opts.Args) > 0:
		return errs.New(errs.InvalidRequest, "--trace draws a trace: name no run with it")
	case opts.Trace == "" && len(opts.Args) != 1:
		return errs.New(errs.InvalidRequest, "show --html: name one run (or --trace FILE)")
	case opts.Follow && (opts.Output == "" || opts.Trace != ""):
		return errs.New(errs.InvalidRequest, "--follow rewrites a file: give -o FILE and a run")
	}
	if opts.Output != "" {
		root, err := opts.StateDir()
		if err != nil {
			return err
		}
		if err := cmdutil.OutsideState(root, opts.Output); err != nil {
			return err
		}
	}
	if opts.Trace != "" {
		return traceHTML(opts, mode)
	}
	run := opts.Args[0]
	svc, err := opts.RunService(run)
	if err != nil {
		return err
	}
	for {
		st, err := svc.Status(opts.Ctx, run)
		if err != nil {
			return err
		}
		rows, err := svc.Rows(opts.Ctx, run)
		if err != nil {
			return err
		}
		live := st.State == store.StateRunning
		if err := writePage(opts, mode, rows, htmlview.Options{Live: live && opts.Follow, Now: time.Now()}); err != nil {
			return err
		}
		if !opts.Follow || !live {
			return nil
		}
		select {
		case <-opts.Ctx.Done():
			return nil
		case <-time.After(rewriteEvery):
		}
	}
}

// traceHTML writes the page of a trace file.
func traceHTML(opts *Options, mode os.FileMode) error {
	rows, err := readTrace(opts.Trace)
	if err != nil {
		return err
	}
	return writePage(opts, mode, rows, htmlview.Options{})
}

// readTrace is the rows of a trace file.
func readTrace(file string) ([]journal.Row, error) {
	f, err := userfile.Open(file)
	if err != nil {
		return nil, errs.New(errs.InvalidRequest, "--trace %s: %v", file, err)
	}
	rows, err := journal.Import(f)
	f.Close()
	if err != nil {
		return nil, errs.New(errs.InvalidRequest, "--trace %s: %v", file, err)
	}
	return rows, nil
}

func writePage(opts *Options, mode os.FileMode, rows []journal.Row, view htmlview.Options) error {
	var b bytes.Buffer
	if err := htmlview.Render(&b, rows, view); err != nil {
		return err
	}
	if opts.Output == "" {
		_, err := opts.IO.Out.Write(b.Bytes())
		return err
	}
	if err := cmdutil.WriteWhole(opts.Output, b.Bytes(), mode); err != nil {
		return errs.New(errs.CapabilityUnavailable, "-o %s: cannot write: %v", opts.Output, err)
	}
	if !opts.told {
		opts.told = true
		where := opts.Output
		if abs, err := filepath.Abs(where); err == nil {
			where = abs
		}
		what := "rewritten until the run ends"
		if !view.Live {
			what = "open it in a browser"
		}
		fmt.Fprintf(opts.IO.ErrOut, "crw: wrote %s (%s)\n", where, what)
	}
	return nil
}
