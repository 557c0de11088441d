// Package trace is crw flow trace: a run's journal exported as a trace, to stdout or a file.
package trace

import (
	"errors"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
)

// Options are crw flow trace's.
type Options struct {
	cmdutil.Common
	Run string
	// Output is the file to write ("" or "-": stdout), with Mode (its octal text) when ModeSet.
	Output  string
	Mode    string
	ModeSet bool
}

// NewCmdTrace is crw flow trace; runF, when not nil, runs in place of the command.
func NewCmdTrace(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "trace RUN",
		Short: "Export a run's journal as a trace (JSON Lines, crw-trace/1), while it runs too",
		Long: `Export a run's journal as a trace: JSON Lines, crw-trace/1, to standard output or to -o FILE
(written 0600 unless --mode says otherwise); a live run's too. crw flow shadow --trace and crw
flow show --trace read it.

Exit status: 0 when the trace was written, 1 when the run is not there, or its journal could not
be read or the file written, 2 on bad input.`,
		Args: cobra.ExactArgs(1),
		RunE: cmdutil.RunE(f, &opts.Common, opts, opts.take, runF, runTrace),
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write the trace to this file instead of stdout")
	cmd.Flags().StringVar(&opts.Mode, "mode", "0600", "with --output: the file's mode, in octal (it holds prompts and answers)")
	return cmd
}

// take takes the run and whether --mode was given.
func (o *Options) take(cmd *cobra.Command, args []string) {
	o.Run, o.ModeSet = args[0], cmd.Flags().Changed("mode")
}

func runTrace(opts *Options) error {
	svc, err := opts.RunService(opts.Run)
	if err != nil {
		return err
	}
	// The rows stream from the journal to the trace: memory stays flat in the run's size.
	if _, err := svc.Store.Spec(opts.Ctx, opts.Run); err != nil {
		return err
	}
	if opts.Output == "" || opts.Output == "-" {
		if opts.ModeSet {
			return errs.New(errs.InvalidRequest, "--mode goes with --output FILE")
		}
		_, err := export(opts, svc, opts.IO.Out)
		return err
	}
	root, err := opts.StateDir()
	if err != nil {
		return err
	}
	if err := cmdutil.OutsideState(root, opts.Output); err != nil {
		return err
	}
	perm, err := cmdutil.ExportMode(opts.Mode)
	if err != nil {
		return err
	}
	rows, err := exportFile(opts, svc, perm)
	if err != nil {
		return err
	}
	if opts.JSON {
		cmdutil.WriteJSON(opts.IO.Out, map[string]any{"run": opts.Run, "file": opts.Output, "rows": rows})
	}
	return nil
}

// export writes the run's trace to w and says how many rows it holds.
func export(opts *Options, svc *engine.Service, w io.Writer) (uint64, error) {
	tw, err := journal.NewTraceWriter(w, opts.Run)
	if err != nil {
		return 0, err
	}
	if err := svc.Store.Rows(opts.Ctx, opts.Run, 1, tw.Row); err != nil {
		return tw.Rows(), err
	}
	return tw.Rows(), tw.Flush()
}

// exportFile writes the run's trace to --output with mode perm: whole, or not at all.
func exportFile(opts *Options, svc *engine.Service, perm os.FileMode) (uint64, error) {
	output := opts.Output
	f, err := os.OpenFile(output, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return 0, errs.New(errs.InvalidRequest, "--output %s: %v", output, errors.Unwrap(err))
	}
	regular := false
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		// An existing file keeps its mode otherwise; a device or a pipe (/dev/stdout)
		// is written to as it is.
		regular = true
		if err := f.Chmod(perm); err != nil {
			f.Close()
			return 0, errs.New(errs.CapabilityUnavailable, "--output %s: %v", output, errors.Unwrap(err))
		}
	}
	rows, err := export(opts, svc, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if regular {
			os.Remove(output) // no half of a trace is left for a whole one
		}
		if _, ok := errs.As(err); ok {
			return rows, err // the journal's: it says what is wrong with the run
		}
		return rows, errs.New(errs.CapabilityUnavailable, "--output %s: the trace could not be written", output).Wrap(err)
	}
	return rows, nil
}
