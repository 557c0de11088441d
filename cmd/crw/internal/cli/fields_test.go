package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/backends"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/internal/enginetest"
)

// fields are every field an error of the engine or of ops can name.
func fields() []string { return slices.Concat(engine.Fields(backends.Registry()), ops.Fields) }

// TestEveryFieldHasAFlag: every field the engine's errors can name (engine.Fields, ops.Fields)
// has a flag in the command line's one table of them (cmdutil.Flags, and a backend's option
// its own name), a flag some command of crw takes; the table names no field there is not.
func TestEveryFieldHasAFlag(t *testing.T) {
	t.Parallel()
	taken := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { taken["--"+f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(newInvocation(&IO{}, backends.Registry())))
	flag := regexp.MustCompile(`--[a-z-]+`)
	all := fields()
	for _, f := range all {
		name := cmdutil.FlagOf(f)
		if !assert.NotEmpty(t, name, "the field %s has no flag", f) || name == "workflow" {
			continue
		}
		flags := flag.FindAllString(name, -1)
		assert.NotEmpty(t, flags, "%s: %q names no flag", f, name)
		for _, fl := range flags {
			assert.True(t, taken[fl], "%s: %s is no flag of crw", f, fl)
		}
	}
	for f := range cmdutil.Flags {
		assert.Contains(t, all, f, "cmdutil.Flags names a field no error names")
	}
}

// badFlag is a command line with a flag the engine refuses, and the error it prints.
type badFlag struct {
	field string
	args  []string
	want  string // the start of stderr's line, after "crw: "
}

// createFlags are the bad flags of crw flow run, one at least for each option of a run.
func createFlags(dir, wf, repo string) []badFlag {
	run := func(args ...string) []string { return append([]string{"flow", "run", wf}, args...) }
	noRepo := func(args ...string) []string { return run(append(args, "--no-repo")...) }
	session := func(args ...string) []string {
		return noRepo(append([]string{"--backend", "session", "--owner", "t1", "--host", "unix:///tmp/crw-fields.sock"}, args...)...)
	}
	notJSON := filepath.Join(dir, "not.json")
	return []badFlag{
		{"workflow", []string{"flow", "run", dir, "--no-repo"}, "invalid_request: workflow " + dir + ": not a readable file"},
		{"input", noRepo("--input", "{"), "invalid_request: --input: not JSON: "},
		{"input", noRepo("--input", "@"+notJSON), "invalid_request: --input @" + notJSON + ": not JSON: "},
		{"backend", noRepo("--backend", "nope"), `invalid_request: --backend "nope": not a backend of this build`},
		{"pool", noRepo("--pool", "0"), "invalid_request: --pool: must be 1 or more, got 0"},
		{"budget_tokens", noRepo("--budget-tokens", "-1"), "invalid_request: --budget-tokens: must not be negative, got -1"},
		{"lib_dirs", noRepo("--lib", wf), "invalid_request: --lib " + wf + ": not a folder"},
		{"limits.stack_depth", noRepo("--max-stack-depth", "0"), "invalid_request: --max-stack-depth: must be from 1 to 100000, got 0"},
		{"limits.stack_depth", noRepo("--max-stack-depth", "9999999999"), "invalid_request: --max-stack-depth: must be from 1 to 100000, got 9999999999"},
		{"limits.heap_bytes", noRepo("--max-heap", "0"), "invalid_request: --max-heap: 0 MiB; it must be from 1 MiB to 1 PiB"},
		{"limits.heap_bytes", noRepo("--max-heap", "9223372036854775807"), "invalid_request: --max-heap: 9223372036854775807 bytes; it must be from 1 MiB to 1 PiB"},
		{"limits.load_time", noRepo("--max-load-time", "0s"), "invalid_request: --max-load-time: must be 1ms or more, got 0s"},
		{"limits.deadline", noRepo("--deadline", "-1s"), "invalid_request: --deadline: must be 0 (none) or 1ms or more, got -1s"},
		{"limits.prompt_bytes", noRepo("--max-prompt", "0"), "invalid_request: --max-prompt: 0 KiB; it must be from 1 KiB to 64 MiB"},
		{"limits.log_bytes", noRepo("--max-log", "2048"), "invalid_request: --max-log: 2 GiB; it must be from 1 MiB to 1 GiB"},
		{"tier_steps", noRepo("--tier-steps", "sometimes"), `invalid_request: --tier-steps: "sometimes" is not auto or ask`},
		{"tool_env", noRepo("--tool-env", "CRW_X=1"), "invalid_request: --tool-env CRW_X: not settable"},
		{"tool_env", noRepo("--tool-env", "X"), `invalid_request: --tool-env "X": not NAME=VALUE`},
		{"tool_path", noRepo("--tool-path", "bin"), `invalid_request: --tool-path "bin": not an absolute directory path`},
		{"repo", run("--repo", wf), "invalid_request: --repo " + wf + ": not a folder"},
		{"head", run("--repo", repo, "--head", "nope"), "invalid_request: --head nope: "},
		{"repo_url", run("--repo", repo, "--repo-url", "https://me:secret@git.example/app.git"), "invalid_request: --repo-url: holds a password"},
		{"no_repo", run("--no-repo", "--head", "main"), "invalid_request: --no-repo: goes with no repository and no head"},
		{"backend_opts.answers", noRepo("--answers", filepath.Join(dir, "none.json")), "invalid_request: --answers " + filepath.Join(dir, "none.json") + ": cannot read"},
		{"backend_opts.codex", noRepo("--codex", "/no/codex"), "invalid_request: --codex: an option of backend app-server or session, not of backend fake"},
		{"backend_opts.owner", noRepo("--backend", "session", "--owner", "a b"), `invalid_request: --owner: "a b" is not a thread id`},
		{"backend_opts.host", noRepo("--backend", "session", "--owner", "t1", "--host", "x.sock"), `invalid_request: --host: "x.sock" is not unix:///absolute/path`},
		{"backend_opts.wake", session("--wake", "maybe"), `invalid_request: --wake: "maybe" is neither on nor off`},
		{"backend_opts.lost-after", session("--lost-after", "1ms"), `invalid_request: --lost-after: "1ms" is not a duration`},
		{"backend_opts.poll", session("--poll", "soon"), `invalid_request: --poll: "soon" is not a duration`},
		{"backend_opts.wake-after", session("--wake-after", "0s"), `invalid_request: --wake-after: "0s" is not a duration`},
		{"backend_opts.renotify-max", session("--renotify-max", "9999h"), `invalid_request: --renotify-max: "9999h" is not a duration`},
		{"backend_opts.unresponsive-after", session("--unresponsive-after", "-1m"), `invalid_request: --unresponsive-after: "-1m" is not a duration`},
	}
}

// requestFlags are the bad flags of the commands on the run run of the workflow wf, waiting
// for its decision go after its call c1 was lost, and diverged, the workflow changed.
func requestFlags(run, diverged string) []badFlag {
	return []badFlag{
		{"verdict", []string{"flow", "recover", run, "c1"}, "invalid_request: --applied or --not-applied: missing: give the verdict"},
		{"output", []string{"flow", "recover", run, "c1", "--not-applied", "--output", `"x"`}, "invalid_request: --output: only with the verdict applied"},
		{"value", []string{"flow", "answer", run, "go", "--value", `{"go": "yes"}`, "--no-resume"}, `invalid_request: --value: the answer to "go" (go on?) does not satisfy its schema`},
		{"limit", []string{"flow", "effects", "--limit", "0"}, "invalid_request: --limit: 1 to 10000, got 0"},
		{"limit", []string{"flow", "audit", "--limit", "0"}, "invalid_request: --limit: 1 to "},
		{"script", []string{"flow", "resume", run, "--script", diverged}, "revision_conflict (divergence): --script " + diverged + ": takes another path than run " + run + " recorded"},
		{"budget_tokens", []string{"flow", "resume", run, "--budget-tokens", "-1"}, "invalid_request: --budget-tokens: must not be negative, got -1"},
		{"run", []string{"flow", "shadow", diverged}, "invalid_request: give exactly one of --run RUN and --trace FILE"},
		{"trace", []string{"flow", "shadow", diverged, "--trace", diverged}, "invalid_request: --trace " + diverged + ": journal: import: line 1: "},
	}
}

// TestAFlagTheEngineRefusesIsNamed: a bad value of each option a run is created with, and of
// the fields of the other commands the engine checks, is refused by the engine and printed by
// the command line naming the flag it was given with (the file --input @FILE read), exit 2 (1
// for a revision conflict); every field an error can name has a case here.
func TestAFlagTheEngineRefusesIsNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(enginetest.DecisionWorkflow), 0o644))
	diverged := filepath.Join(dir, "diverged.js")
	require.NoError(t, os.WriteFile(diverged, []byte(strings.Replace(enginetest.DecisionWorkflow, `"try"`, `"other"`, 1)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "not.json"), []byte("task: x"), 0o644))
	answers := filepath.Join(dir, "a.json")
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [{"match": {"call": 1}, "turns": [{"lost": true}]}]}`), 0o644))
	repo := enginetest.GitRepo(t, map[string]string{"README.md": "# x\n"})
	crw := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := Run(append(args, "--state", state), IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, backends.Registry())
		return code, out.String(), errOut.String()
	}
	code, out, errOut := crw("--json", "flow", "run", wf, "--no-repo", "--answers", answers)
	require.Equal(t, cmdutil.ExitWaiting, code, "%s%s", out, errOut)
	run := regexp.MustCompile(`"run":"([^"]+)"`).FindStringSubmatch(out)[1]

	covered := map[string]bool{}
	for _, tt := range slices.Concat(createFlags(dir, wf, repo), requestFlags(run, diverged)) {
		code, _, errOut := crw(tt.args...)
		want := cmdutil.ExitBadInput
		if strings.HasPrefix(tt.want, "revision_conflict") {
			want = cmdutil.ExitFailed
		}
		assert.Equal(t, want, code, "%s: %s", tt.field, errOut)
		assert.True(t, strings.HasPrefix(errOut, "crw: "+tt.want), "%s: %s", tt.field, errOut)
		covered[tt.field] = true
	}
	for _, f := range fields() {
		assert.True(t, covered[f], "no case of a bad %s", f)
	}
}
