package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/check"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/appserver"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/inputs"
)

// The docs' examples: every fenced block of README.md, docs/ and lib/README.md is run, each the
// way its kind runs. A JavaScript block is a workflow (it has a default export), which `crw flow
// check` must find nothing in and rehearse to its end, or a module of one (its first line names
// its file: "// file: lib/schemas/x.js"); a JSON block is an answers file or a role table; a
// command of a sh block is parsed as the command line would, flags and arguments included.

type block struct {
	file, lang, text string
	line             int
}

var fence = regexp.MustCompile("(?m)^```([a-z]*)\n((?s:.*?))^```\n")

func docBlocks(t *testing.T) []block {
	t.Helper()
	root := "../../../.."
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "lib/README.md")}
	docs, err := filepath.Glob(filepath.Join(root, "docs/*.md"))
	require.NoError(t, err)
	files = append(files, docs...)
	var out []block
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range fence.FindAllSubmatchIndex(data, -1) {
			out = append(out, block{file: filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(f), lang: string(data[m[2]:m[3]]),
				text: string(data[m[4]:m[5]]), line: 1 + strings.Count(string(data[:m[0]]), "\n")})
		}
	}
	require.NotEmpty(t, out)
	return out
}

var fileLine = regexp.MustCompile(`^// file: (\S+)`)

func TestTheDocsJavaScriptExamplesCheckClean(t *testing.T) {
	t.Parallel()
	dirs := map[string]string{} // a markdown file's examples share a folder: a module beside its workflow
	type workflow struct{ path, where string }
	var workflows []workflow
	for _, b := range docBlocks(t) {
		if b.lang != "js" && b.lang != "ts" {
			continue
		}
		if dirs[b.file] == "" {
			dirs[b.file] = t.TempDir()
		}
		where := fmt.Sprintf("%s:%d", b.file, b.line)
		name := fmt.Sprintf("example-%d.%s", b.line, b.lang)
		if m := fileLine.FindStringSubmatch(b.text); m != nil {
			name = m[1]
		} else {
			require.Contains(t, b.text, "export default", "%s: a JavaScript example is a whole workflow, or names its file", where)
			workflows = append(workflows, workflow{filepath.Join(dirs[b.file], name), where})
		}
		p := filepath.Join(dirs[b.file], filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(b.text), 0o644))
	}
	require.NotEmpty(t, workflows)
	for _, w := range workflows {
		rep, err := check.Check(context.Background(), check.Options{Workflow: w.path, Input: json.RawMessage(`{"task": "add a --verbose flag"}`)})
		require.NoError(t, err, w.where)
		assert.Empty(t, rep.Findings, "%s: %+v", w.where, rep.Findings)
		assert.Equal(t, "completed", rep.Status, w.where)
	}
}

func TestTheDocsJSONExamplesParse(t *testing.T) {
	t.Parallel()
	n := 0
	for _, b := range docBlocks(t) {
		if b.lang != "json" {
			continue
		}
		n++
		where := fmt.Sprintf("%s:%d", b.file, b.line)
		switch {
		case strings.Contains(b.text, `"answers"`):
			_, err := fake.ParseAnswers(where, []byte(b.text))
			assert.NoError(t, err, where)
		case strings.Contains(b.text, `"roles"`):
			_, err := inputs.ParseRoles(where, []byte(b.text))
			assert.NoError(t, err, where)
		default:
			t.Errorf("%s: a JSON example that is neither an answers file nor a role table", where)
		}
	}
	assert.NotZero(t, n)
}

// TestTheDocsCommandsParse: every crw command of a sh example names a command crw has, with
// flags it takes and the arguments it wants. A line with [ ] is a synopsis, not a command.
func TestTheDocsCommandsParse(t *testing.T) {
	t.Parallel()
	n := 0
	for _, b := range docBlocks(t) {
		if b.lang != "sh" {
			continue
		}
		for i, line := range strings.Split(b.text, "\n") {
			for _, part := range strings.Split(line, "&&") {
				part = strings.TrimSpace(part)
				if c := strings.Index(part, " #"); c >= 0 {
					part = strings.TrimSpace(part[:c])
				}
				args, ok := strings.CutPrefix(part, "bin/crw ")
				if !ok {
					args, ok = strings.CutPrefix(part, "crw ")
				}
				if !ok || strings.Contains(part, "[") {
					continue
				}
				n++
				where := fmt.Sprintf("%s:%d", b.file, b.line+1+i)
				words, err := shellWords(args)
				require.NoError(t, err, where)
				root := newRoot(newInvocation(&IO{}, backend.NewRegistry(fake.Descriptor(), appserver.Descriptor(), session.Descriptor(session.Hosts{}))))
				cmd, rest, err := root.Find(words)
				require.NoError(t, err, where)
				require.NotEqual(t, root, cmd, "%s: no such command: %s", where, part)
				require.NoError(t, cmd.ParseFlags(rest), where)
				assert.NoError(t, cmd.ValidateArgs(cmd.Flags().Args()), where)
			}
		}
	}
	assert.NotZero(t, n)
}

// TestTheHelpExamplesParse: every example of every command's --help parses as a command line.
func TestTheHelpExamplesParse(t *testing.T) {
	t.Parallel()
	newRootForTest := func() *cobra.Command {
		root := newRoot(newInvocation(&IO{}, backend.NewRegistry(fake.Descriptor(), appserver.Descriptor(), session.Descriptor(session.Hosts{}))))
		root.InitDefaultVersionFlag()
		return root
	}
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, line := range strings.Split(c.Example, "\n") {
			part := strings.TrimSpace(line)
			if i := strings.Index(part, " <"); i >= 0 {
				part = part[:i]
			}
			if i := strings.Index(part, " &&"); i >= 0 {
				part = part[:i]
			}
			args, ok := strings.CutPrefix(part, "crw ")
			if !ok {
				continue
			}
			n++
			words, err := shellWords(args)
			require.NoError(t, err, line)
			root := newRootForTest()
			cmd, rest, err := root.Find(words)
			require.NoError(t, err, line)
			require.NoError(t, cmd.ParseFlags(rest), "%s: %s", c.CommandPath(), line)
			assert.NoError(t, cmd.ValidateArgs(cmd.Flags().Args()), "%s: %s", c.CommandPath(), line)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootForTest())
	assert.Greater(t, n, 40)
}

// shellWords splits a command line as sh does for the quoting the docs use.
func shellWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("an unclosed quote in %q", s)
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

// TestTheDocsCheckOutputsAreWhatCheckPrints: a `crw flow check` example followed by a text
// block is run on the JavaScript example before it, written where the command names it, and
// prints what the text block shows (its folder read as /home/me/flows).
func TestTheDocsCheckOutputsAreWhatCheckPrints(t *testing.T) {
	t.Parallel()
	blocks := docBlocks(t)
	n := 0
	for i := 2; i < len(blocks); i++ {
		wf, cmdBlock, want := blocks[i-2], blocks[i-1], blocks[i]
		line := strings.TrimSpace(cmdBlock.text)
		if want.lang != "text" || cmdBlock.lang != "sh" || !strings.HasPrefix(line, "crw flow check ") || wf.lang != "js" {
			continue
		}
		n++
		where := fmt.Sprintf("%s:%d", cmdBlock.file, cmdBlock.line)
		words, err := shellWords(strings.TrimPrefix(line, "crw "))
		require.NoError(t, err, where)
		dir, err := filepath.EvalSymlinks(t.TempDir())
		require.NoError(t, err)
		path := filepath.Join(dir, words[2])
		require.NoError(t, os.WriteFile(path, []byte(wf.text), 0o644), where)
		words[2] = path
		var out, errOut strings.Builder
		Run(append(words, "--state", filepath.Join(dir, "state")), IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, backend.NewRegistry(fake.Descriptor()))
		assert.Equal(t, want.text, strings.ReplaceAll(out.String(), dir+string(filepath.Separator), "/home/me/flows/"), "%s: %s", where, errOut.String())
	}
	assert.NotZero(t, n)
}
