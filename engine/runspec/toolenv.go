package runspec

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/errs"
)

// A run's tool environment (tool_env NAME=VALUE, tool_path DIR) is recorded in run.json's
// env beside its TMPDIR. The host's shell is the owner's or the app server's and a subagent is
// spawned with no environment of its own, so the packet's and the turn's tools section name
// each entry and the prefix every command takes; an App Server thread also gets them in its
// shell environment policy.

// Bounds of a tool environment.
const (
	maxToolEnv      = 32
	maxToolEnvValue = 4096
)

var toolEnvName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reservedEnv are the names crw sets itself.
func reservedEnv(name string) string {
	switch {
	case name == "TMPDIR":
		return "crw records the run's TMPDIR itself (the caller's $TMPDIR)"
	case name == "PATH":
		return "the run's tool path goes before $PATH"
	case strings.HasPrefix(name, "CRW_"), strings.HasPrefix(name, "CODEX_"):
		return "crw and Codex read it themselves"
	}
	return ""
}

// toolEnv checks a run's tool environment and returns the entries run.json records: each
// tool_env entry, and PATH as the tool_path directories before $PATH.
func toolEnv(set map[string]string, path []string) (map[string]string, error) {
	out := map[string]string{}
	if len(set) > maxToolEnv {
		return nil, errs.Field("tool_env", "", "%d entries, more than %d", len(set), maxToolEnv)
	}
	for name, value := range set {
		if err := checkToolEnv(name, value); err != nil {
			return nil, errs.Field("tool_env", name, "%v", err)
		}
		out[name] = value
	}
	if len(path) > 0 {
		dirs := make([]string, 0, len(path))
		for _, d := range path {
			if !filepath.IsAbs(d) || strings.ContainsAny(d, ":\n\x00") {
				return nil, errs.Field("tool_path", fmt.Sprintf("%q", d), "not an absolute directory path without ':'")
			}
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
				return nil, errs.Field("tool_path", d, "not a directory")
			}
			dirs = append(dirs, filepath.Clean(d))
		}
		out["PATH"] = strings.Join(dirs, ":") + backend.PathTail
	}
	return out, nil
}

func checkToolEnv(name, value string) error {
	switch {
	case !toolEnvName.MatchString(name):
		return fmt.Errorf("%q is not a variable name (letters, digits and _, not a digit first)", name)
	case reservedEnv(name) != "":
		return fmt.Errorf("not settable: %s", reservedEnv(name))
	case len(value) > maxToolEnvValue:
		return fmt.Errorf("a value of %d bytes, more than %d", len(value), maxToolEnvValue)
	case strings.ContainsAny(value, "\n\r\x00"):
		return fmt.Errorf("a value with a line break or a NUL")
	}
	return nil
}

// CheckRecordedEnv checks run.json's env as a process reads it: TMPDIR, a PATH of directories
// before $PATH, and tool entries a create would have taken.
func CheckRecordedEnv(env map[string]string) error {
	if len(env) > maxToolEnv+2 {
		return fmt.Errorf("%d entries", len(env))
	}
	for name, value := range env {
		switch name {
		case "TMPDIR":
		case "PATH":
			dirs, ok := strings.CutSuffix(value, backend.PathTail)
			if !ok || dirs == "" || strings.ContainsAny(dirs, "\n\x00") {
				return fmt.Errorf("PATH %q is not directories before %s", value, backend.PathTail)
			}
		default:
			if err := checkToolEnv(name, value); err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
		}
	}
	return nil
}
