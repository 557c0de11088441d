package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/engine/backend/codex"
)

// versionInfo is `crw version --json`.
type versionInfo struct {
	Version string `json:"version"` // the module's, or "(devel)" for a build from a checkout
	Commit  string `json:"commit,omitempty"`
	Go      string `json:"go"`
	Goja    string `json:"goja"`
	// Codex is the Codex CLI whose App Server protocol crw speaks (the session and app-server
	// backends are tested against it).
	Codex string `json:"codex_protocol"`
}

func buildVersion() versionInfo {
	v := versionInfo{Version: "(devel)", Go: runtime.Version(), Goja: "unknown", Codex: codex.CodexVersion}
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

func (v versionInfo) String() string {
	s := "crw " + v.Version
	if v.Commit != "" {
		s += " (" + v.Commit + ")"
	}
	return fmt.Sprintf("%s\n%s, goja %s, Codex app-server protocol %s\n", s, v.Go, v.Goja, v.Codex)
}

func newCmdVersion(g *globals, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print crw's version, and the Go, goja and Codex protocol versions it was built with",
		Example: `  crw version
  crw --version
  crw version --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := buildVersion()
			if g.json {
				writeJSON(streams.Out, v)
				return nil
			}
			fmt.Fprint(streams.Out, v.String())
			return nil
		},
	}
}
