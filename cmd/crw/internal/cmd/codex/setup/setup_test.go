package setup

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/cmd/crw/internal/codexsetup"
	"github.com/crw-dev/crw/journal"
)

func TestNewCmdSetup(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdSetup, "--codex-home", "/h", "--roles", "roles.json", "--codex", "/bin/codex", "--check")
	require.NoError(t, err)
	assert.Equal(t, "/h", opts.CodexHome)
	assert.Equal(t, "roles.json", opts.Roles)
	assert.Equal(t, "/bin/codex", opts.Codex)
	assert.True(t, opts.Check)
	state, err := opts.StateDir()
	require.NoError(t, err)
	assert.Equal(t, e.State, state)

	_, err = cmdtest.Parse(t, e, NewCmdSetup, "extra")
	assert.EqualError(t, err, `unknown command "extra" for "setup"`)
}

func TestSetupWithACodexThatIsNot(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	codex := filepath.Join(e.Dir, "no-codex")
	err := runSetup(&Options{Common: e.Common(), CodexHome: filepath.Join(e.Dir, "home"), Codex: codex, Check: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid_request: --codex "+codex+": ")
	assert.Empty(t, e.Out.String())
	assert.NoDirExists(t, e.State, "a check opens no state folder")
}

func TestSetupWithARoleTableThatIsNot(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := runSetup(&Options{Common: e.Common(), CodexHome: filepath.Join(e.Dir, "home"), Roles: filepath.Join(e.Dir, "none.json")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "none.json")
	assert.Equal(t, "CODEX_HOME "+filepath.Join(e.Dir, "home"), e.Factory.Outcome.AuditDetail, "a setup is audited with its CODEX_HOME")
	assert.DirExists(t, e.State, "a setup opens the state folder its hook uses")
}

func TestHookCommandQuotesWhatTheShellWouldSplit(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "/usr/bin/crw --state '/s/my state' codex hook", hookCommand("/usr/bin/crw", "/s/my state"))
	assert.Equal(t, `'it'\''s'`, shellQuote("it's"))
	assert.Equal(t, `''`, shellQuote(""))
}

func TestPrintReport(t *testing.T) {
	t.Parallel()
	rep := &codexsetup.Report{
		CodexHome: "/h",
		Roles: []codexsetup.RoleReport{
			{Role: "architect", Status: "in_place", Pair: journal.Pair{Model: "m1", Effort: "high"}},
			{Role: "explorer", Status: "missing"},
		},
		Hook:    codexsetup.HookReport{Status: "untrusted", Detail: "no hash"},
		Missing: []string{"role explorer"},
	}
	var b strings.Builder
	printReport(&b, rep, true)
	assert.Equal(t, "CODEX_HOME /h\n"+
		"  role architect    in_place      m1/high\n"+
		"  role explorer     missing       the host's pair\n"+
		"  spawn hook        untrusted: no hash\n"+
		"missing: role explorer\n", b.String())

	b.Reset()
	rep.Missing = nil
	printReport(&b, rep, false)
	assert.True(t, strings.HasSuffix(b.String(), "nothing to write: all in place\n"), "a setup that wrote nothing says so")
}
