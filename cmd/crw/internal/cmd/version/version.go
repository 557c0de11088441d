// Package version is crw version: crw's version, and the Go, goja and Codex protocol versions
// it was built with.
package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine/backend/codex"
)

// Info is `crw version --json`.
type Info struct {
	Version string `json:"version"` // the module's, or "(devel)" for a build from a checkout
	Commit  string `json:"commit,omitempty"`
	Go      string `json:"go"`
	Goja    string `json:"goja"`
	// Codex is the Codex CLI whose App Server protocol crw speaks (the session and app-server
	// backends are tested against it).
	Codex string `json:"codex_protocol"`
}

// Build is the version of this build.
func Build() Info {
	v := Info{Version: "(devel)", Go: runtime.Version(), Goja: "unknown", Codex: codex.CodexVersion}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if info.Main.Version != "" {
		v.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			v.Commit = s.Value
		}
	}
	for _, d := range info.Deps {
		if d.Path == "github.com/dop251/goja" {
			v.Goja = d.Version
		}
	}
	return v
}

func (v Info) String() string {
	s := "crw " + v.Version
	if v.Commit != "" {
		s += " (" + v.Commit + ")"
	}
	return fmt.Sprintf("%s\n%s, goja %s, Codex app-server protocol %s\n", s, v.Go, v.Goja, v.Codex)
}

// Options are crw version's.
type Options struct {
	cmdutil.Common
	Info Info
}

// NewCmdVersion is crw version; runF, when not nil, runs in place of the command.
func NewCmdVersion(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	return &cobra.Command{
		Use:   "version",
		Short: "Print crw's version, and the Go, goja and Codex protocol versions it was built with",
		Long: `Print crw's version, and the Go, goja and Codex protocol versions it was built with.

Exit status: 0; 2 on bad input.`,
		Example: `  crw version
  crw --version
  crw version --json`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, &opts.Common, opts, opts.take, runF, runVersion),
	}
}

// take takes the version of this build.
func (o *Options) take(_ *cobra.Command, _ []string) {
	o.Info = Build()
}

func runVersion(opts *Options) error {
	opts.Print(opts.Info, func(w io.Writer) {
		fmt.Fprint(w, opts.Info.String())
	})
	return nil
}
