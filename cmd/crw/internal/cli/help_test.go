package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/appserver"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/backend/session"
)

// TestEveryCommandHasExamples: every command a user runs shows Examples in its --help.
func TestEveryCommandHasExamples(t *testing.T) {
	t.Parallel()
	root := newRoot(newInvocation(&IO{}, backend.NewRegistry(fake.Descriptor(), appserver.Descriptor(), session.Descriptor(session.Hosts{}))))
	root.InitDefaultCompletionCmd()
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" || sub.HasParent() && sub.Parent().Name() == "completion" {
				continue
			}
			n++
			assert.NotEmpty(t, sub.Example, "%s has no examples", sub.CommandPath())
			walk(sub)
		}
	}
	walk(root)
	assert.Greater(t, n, 25)
}

// exitStatus is the Exit status paragraph of a command's help, on one line.
var exitStatus = regexp.MustCompile(`(?ms)^Exit status: (.*?)(?:\n\n|\z)`)

// TestEveryCommandSaysItsExitStatus: every command a user runs has an "Exit status:" paragraph
// in its --help, and those of the commands that end with a run's state name its codes.
func TestEveryCommandSaysItsExitStatus(t *testing.T) {
	t.Parallel()
	root := newRoot(newInvocation(&IO{}, backend.NewRegistry(fake.Descriptor(), appserver.Descriptor(), session.Descriptor(session.Hosts{}))))
	// cobra adds its completion command when the root command runs: as it does, so that its
	// help, and each shell's, is looked at too.
	root.InitDefaultCompletionCmd()
	said := map[string]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if m := exitStatus.FindStringSubmatch(c.Long); m != nil {
			said[c.CommandPath()] = strings.Join(strings.Fields(m[1]), " ")
		} else {
			t.Errorf("%s: its help has no Exit status paragraph", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			if !sub.Hidden && sub.Name() != "help" {
				walk(sub)
			}
		}
	}
	walk(root)
	assert.Greater(t, len(said), 30)

	run := said["crw flow run"]
	for _, code := range []string{"0 when the workflow returned", "1 when it threw", "2 on bad input",
		"3 when the run paused", "4 when it waits for a decision"} {
		assert.Contains(t, run, code)
	}
	for _, cmd := range []string{"crw flow resume", "crw flow follow"} {
		assert.Contains(t, said[cmd], "3 when it paused")
		assert.Contains(t, said[cmd], "4 when it waits for a decision")
	}
	for _, cmd := range []string{"crw completion", "crw completion bash", "crw completion zsh", "crw completion fish"} {
		_, ok := said[cmd]
		assert.True(t, ok, "%s is not looked at", cmd)
	}
	assert.Contains(t, said["crw flow status"], "0 completed, 1 failed or cancelled, 3 paused, 4 waiting for a decision, 5 still running, 6 not over and held by no process")
}

// TestCompletionRefusesAShellItDoesNotHave: crw completion alone prints its help; a shell it
// does not have is an unknown command (exit 2) naming the ones it may have meant, not its help
// and success.
func TestCompletionRefusesAShellItDoesNotHave(t *testing.T) {
	t.Parallel()
	reg := backend.NewRegistry(fake.Descriptor())
	var out, errOut strings.Builder
	assert.Equal(t, 2, Run([]string{"completion", "zhs"}, IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, reg))
	assert.Empty(t, out.String())
	assert.Contains(t, errOut.String(), `unknown command "zhs" for "crw completion"; did you mean zsh?`)

	out.Reset()
	errOut.Reset()
	assert.Equal(t, 0, Run([]string{"completion"}, IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, reg))
	assert.Contains(t, out.String(), "Exit status: 0 (alone, it prints its help)")

	out.Reset()
	assert.Equal(t, 0, Run([]string{"completion", "bash"}, IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, reg))
	assert.Contains(t, out.String(), "bash completion")
}

// TestTheCommandsThatRunWorkflowsAreMarked: the commands that replay or run a workflow in their
// own process and end, and those alone, have their heap readied for huge pages; one that prints
// a run's state or starts another process to run it does not pay for it, nor does a long-lived
// server (mcp, worker), whose memory goes back when it is idle.
func TestTheCommandsThatRunWorkflowsAreMarked(t *testing.T) {
	t.Parallel()
	root := newRoot(newInvocation(&IO{}, backend.NewRegistry(fake.Descriptor(), appserver.Descriptor(), session.Descriptor(session.Hosts{}))))
	var marked []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if cmdutil.WorkflowRunner(c) {
			marked = append(marked, c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	assert.ElementsMatch(t, []string{"crw flow run", "crw flow resume", "crw flow shadow", "crw flow check",
		"crw flow _exec"}, marked)

	// crw flow resume --detach resumes in a process of its own, which is the one readied.
	resume, _, err := root.Find([]string{"flow", "resume"})
	require.NoError(t, err)
	require.NoError(t, resume.ParseFlags([]string{"--detach"}))
	assert.False(t, cmdutil.WorkflowRunner(resume), "crw flow resume --detach")
}
