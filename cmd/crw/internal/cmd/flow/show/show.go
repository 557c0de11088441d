// Package show is crw flow show: a run's timeline of calls, one call's rows, or (--html) the
// run as one self-contained HTML page.
package show

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/timeline"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
)

// Options are crw flow show's.
type Options struct {
	cmdutil.Common
	// Args are RUN and CALL, as many as were given.
	Args []string
	HTML bool
	// With HTML: Output is the file to write ("": stdout), in Mode (octal text, ModeSet when
	// given); Trace a trace file drawn instead of a run; Follow rewrites Output until the run ends.
	Output  string
	Mode    string
	ModeSet bool
	Trace   string
	Follow  bool
	// told: where the page went was said (once, however often --follow rewrites it).
	told bool
}

// NewCmdShow is crw flow show; runF, when not nil, runs in place of the command.
func NewCmdShow(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "show RUN [CALL]",
		Short: "Show a run's timeline of calls, or one call, while it runs too",
		Long: `Show a run's timeline of calls (role, node, status, reason, turns, tokens, time), its commits,
tier steps, decisions, verdicts and warnings; or one call's rows in detail.

With --html it writes one self-contained HTML page of the run instead (to -o FILE, else to
standard output): a lane per node, each call a bar from its start to its end coloured by its
status, its turns and repair inside it, continuations as links, held and unknown calls and the
pause marked, times and tokens on hover, and the call's rows, prompt and answer on click. The
page loads nothing from the network. --trace FILE draws a trace instead of a run; --follow
rewrites FILE every two seconds until the run ends (the page reloads itself meanwhile).

--trace FILE without --html shows a trace (crw flow trace) as a run is shown: its timeline, or
with CALL that call's rows.

Exit status: 0 when it was shown or written, 1 when the run is not there, could not be read or
the page written, 2 on bad input (a call or trace that is not there included).`,
		Example: `  crw flow show RUN
  crw flow show RUN c3
  crw flow show RUN --html -o run.html
  crw flow show --trace run.jsonl
  crw flow show --trace run.jsonl --html -o run.html`,
		Args: cobra.RangeArgs(0, 2),
		RunE: cmdutil.RunE(f, &opts.Common, opts, opts.take, runF, runShow),
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.HTML, "html", false, "write the run as one self-contained HTML page")
	fl.StringVarP(&opts.Output, "output", "o", "", "with --html: the file to write (default: standard output)")
	fl.StringVar(&opts.Mode, "mode", "0600", "with --html -o: the file's mode, in octal (it holds prompts and answers)")
	fl.StringVar(&opts.Trace, "trace", "", "show this trace file (crw flow trace) instead of a run")
	fl.BoolVar(&opts.Follow, "follow", false, "with --html -o FILE: rewrite FILE until the run ends")
	return cmd
}

// take takes RUN and CALL as given, and whether --mode was.
func (o *Options) take(cmd *cobra.Command, args []string) {
	o.Args, o.ModeSet = args, cmd.Flags().Changed("mode")
}

func runShow(opts *Options) error {
	if opts.ModeSet && (!opts.HTML || opts.Output == "") {
		return errs.New(errs.InvalidRequest, "--mode goes with --html -o FILE")
	}
	if opts.HTML {
		return showHTML(opts)
	}
	if opts.Output != "" || opts.Follow {
		return errs.New(errs.InvalidRequest, "-o and --follow go with --html")
	}
	if opts.Trace != "" {
		return showTrace(opts)
	}
	if len(opts.Args) == 0 {
		return errs.New(errs.InvalidRequest, "show: name the run")
	}
	run := opts.Args[0]
	svc, err := opts.RunService(run)
	if err != nil {
		return err
	}
	if len(opts.Args) == 2 {
		return showCall(opts, svc, run, opts.Args[1])
	}
	if opts.JSON {
		return writeJSON(opts, svc, run)
	}
	// The table needs no call's prompt or answer: what is kept of a call is its entry.
	f, err := svc.Fold(opts.Ctx, run, timeline.Options{})
	if err != nil {
		return err
	}
	printTimeline(opts.IO.Out, f)
	return nil
}

// showTrace shows a trace file (crw flow trace) as show shows a run: its timeline, or with
// CALL that call's rows.
func showTrace(opts *Options) error {
	if len(opts.Args) > 1 || len(opts.Args) == 1 && journal.ValidRunID(opts.Args[0]) {
		return errs.New(errs.InvalidRequest, "--trace shows a trace: name no run with it (only a CALL of the trace)")
	}
	rows, err := readTrace(opts.Trace)
	if err != nil {
		return err
	}
	// The trace is read whole already: its calls' bodies cost nothing more, and --json has them
	// as a run's show --json does.
	fo := timeline.Options{Bodies: opts.JSON}
	if len(opts.Args) == 1 {
		fo.Call = opts.Args[0]
	}
	f := timeline.NewFold(fo)
	for i := range rows {
		f.Add(&rows[i])
	}
	if fo.Call != "" {
		s := f.Timeline()
		if len(s.Calls) == 0 {
			return errs.New(errs.InvalidRequest, "--trace %s has no call %q", opts.Trace, fo.Call)
		}
		c := s.Calls[0]
		opts.Print(c, func(w io.Writer) { printCall(w, c) })
		return nil
	}
	opts.Print(f.Timeline(), func(w io.Writer) { printTimeline(w, f) })
	return nil
}

func showCall(opts *Options, svc *engine.Service, run, id string) error {
	s, err := svc.Timeline(opts.Ctx, run, timeline.Options{Call: id})
	if err != nil {
		return err
	}
	if len(s.Calls) == 0 {
		return errs.New(errs.InvalidRequest, "run %s has no call %q", run, id)
	}
	c := s.Calls[0]
	opts.Print(c, func(w io.Writer) { printCall(w, c) })
	return nil
}

// writeJSON writes the run's Timeline as --json writes a value, its calls streamed from a
// second reading of the journal: memory stays flat however many calls the run has.
func writeJSON(opts *Options, svc *engine.Service, run string) error {
	out := bufio.NewWriter(opts.IO.Out)
	var tail string
	calls := 0
	begin := func(f *timeline.Fold) error {
		head, err := jsonMembers(f.Head())
		if err != nil {
			return err
		}
		if tail, err = jsonMembers(f.Tail()); err != nil {
			return err
		}
		_, _ = out.WriteString("{" + head + `,"calls":[`)
		return nil
	}
	emit := func(c *timeline.Call) error {
		b, err := cmdutil.MarshalJSON(c)
		if err != nil {
			return err
		}
		if calls > 0 {
			_ = out.WriteByte(',')
		}
		calls++
		_, err = out.Write(b)
		return err
	}
	if err := svc.TimelineCalls(opts.Ctx, run, begin, emit); err != nil {
		return err
	}
	_, _ = out.WriteString("]," + tail + "}\n")
	return out.Flush()
}

// jsonMembers is v's JSON object without its braces.
func jsonMembers(v any) (string, error) {
	b, err := cmdutil.MarshalJSON(v)
	if err != nil {
		return "", err
	}
	return string(b[1 : len(b)-1]), nil
}

func printCall(w io.Writer, c timeline.Call) {
	status := cmdutil.Dash(string(c.Status))
	if c.Reason != "" {
		status += " " + c.Reason
	}
	fmt.Fprintf(w, "call     %s (#%d) at %s\nrole     %s\nnode     %s\nstatus   %s\n", c.Call, c.Index, cmdutil.Dash(c.Site), c.Role, c.Node, status)
	if c.Attempts > 1 {
		// A resume took the call up again: this is its newest generation.
		fmt.Fprintf(w, "attempt  %d (its rows from seq %d on; crw flow trace has every attempt's)\n", c.Attempts, c.StartSeq)
	}
	if c.Detail != "" {
		fmt.Fprintf(w, "detail   %s\n", c.Detail)
	}
	fmt.Fprintf(w, "thread   %s (%s, %s)\n", cmdutil.Dash(c.ThreadID), cmdutil.Dash(c.Model), cmdutil.Dash(c.Effort))
	if c.Handle != "" {
		fmt.Fprintf(w, "handle   %s\n", c.Handle)
	}
	if c.Continues != "" {
		fmt.Fprintf(w, "resumes  %s\n", c.Continues)
	}
	fmt.Fprintf(w, "turns    %d (repair used: %v)\n", c.Turns, c.RepairUsed)
	if c.Repair != "" {
		fmt.Fprintf(w, "repair   %s\n", indentAfterFirst(c.Repair))
	}
	fmt.Fprintf(w, "tokens   %d in, %d out\nprompt   %s\n", c.Tokens.Input, c.Tokens.Output, indentAfterFirst(c.Prompt))
	if c.Output != nil {
		fmt.Fprintf(w, "output   %s\n", cmdutil.Compact(c.Output))
	}
}

func indentAfterFirst(s string) string { return strings.ReplaceAll(s, "\n", "\n         ") }
