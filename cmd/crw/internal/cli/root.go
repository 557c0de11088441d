// Package cli is crw's command line: it parses flags, calls the engine and prints. It is the
// one place that renders errors and chooses exit codes.
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/crw-dev/crw/engine"
)

// IO is the process's streams, injected so tests can capture them.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// ErrIsTTY tells whether live progress may redraw a line.
	ErrIsTTY bool
}

// Main runs crw with the process's arguments and streams and returns the exit code.
func Main() int {
	streams := IO{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, ErrIsTTY: term.IsTerminal(int(os.Stderr.Fd()))}
	return Run(os.Args[1:], streams)
}

// errPrinted says a command already wrote its own output for a failure; only the exit code is left.
type errPrinted struct{ code int }

func (e errPrinted) Error() string { return fmt.Sprintf("exit %d", e.code) }

// globals are the flags every command takes.
type globals struct {
	state string
	json  bool
	// runOutput: the command prints a run's end ({"run", "status", "result", "error",
	// "calls"}), so its errors take that shape too.
	runOutput bool
}

// Run runs crw with args and returns the exit code.
func Run(args []string, streams IO) int {
	g := &globals{}
	root := newRoot(g, streams)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return engine.ExitOK
	}
	var printed errPrinted
	if errors.As(err, &printed) {
		return printed.code
	}
	e, ok := engine.AsError(err)
	if !ok {
		// cobra's own errors are about the command line: bad input.
		e = engine.Errorf(engine.CodeInvalidRequest, "%s", err.Error())
	}
	if g.json && g.runOutput {
		// The commands that run a workflow answer in one shape, failed or not.
		writeJSON(streams.Out, runOutput{Status: "error", Result: json.RawMessage("null"), Error: e, Calls: engine.Counts{}})
	} else if g.json {
		writeJSON(streams.Out, map[string]any{"error": e})
	} else {
		fmt.Fprintf(streams.ErrOut, "crw: %s\n", e.Error())
	}
	return e.Exit
}

func newRoot(g *globals, streams IO) *cobra.Command {
	root := &cobra.Command{
		Use:           "crw",
		Short:         "Run agent workflows written in JavaScript or TypeScript",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.PersistentFlags().StringVar(&g.state, "state", "", "the state folder (default $CRW_STATE, else $XDG_STATE_HOME/crw, else ~/.local/state/crw)")
	root.PersistentFlags().BoolVar(&g.json, "json", false, "print one JSON object on stdout")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return engine.Errorf(engine.CodeInvalidRequest, "%v (see %s --help)", err, c.CommandPath())
	})

	flow := &cobra.Command{Use: "flow", Short: "Run, watch and inspect workflow runs", RunE: group}
	flow.AddCommand(newCmdRun(g, streams), newCmdStart(g, streams), newCmdResume(g, streams), newCmdFollow(g, streams),
		newCmdCancel(g, streams), newCmdList(g, streams), newCmdStatus(g, streams), newCmdTrace(g, streams), newCmdShow(g, streams),
		newCmdShadow(g, streams), newCmdExec(g, streams))
	schemaCmd := &cobra.Command{Use: "schema", Short: "Check JSON Schemas against the strict structured-output rules", RunE: group}
	schemaCmd.AddCommand(newCmdSchemaCheck(g, streams))
	root.AddCommand(flow, schemaCmd)
	return root
}

// group runs a command that only holds subcommands: alone it prints its help, and an argument
// that names none of its subcommands is an unknown command. (cobra checks unknown commands only
// on the root.)
func group(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return c.Help()
	}
	return engine.Errorf(engine.CodeInvalidRequest, "unknown command %q for %q (see %s --help)", args[0], c.CommandPath(), c.CommandPath())
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
