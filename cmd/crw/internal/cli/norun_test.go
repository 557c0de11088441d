package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/iostreams"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
)

// TestEveryCommandRefusesARunThatIsNotThere: whichever command names a run the state folder
// does not hold, by its id, a prefix or last, it is not found (exit 1, as gh and Temporal's CLI
// say it), said alike: invalid_request, the run and the folder named, what to do next, and
// nothing else on either stream.
func TestEveryCommandRefusesARunThatIsNotThere(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	script := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(script, []byte("export default async function main() { return 1; }\n"), 0o600))
	const id = "20260101-000000-abcdef"
	commands := [][]string{
		{"status", "RUN"},
		{"status", "RUN", "--exit-status"},
		{"show", "RUN"},
		{"show", "RUN", "c1"},
		{"show", "RUN", "--html"},
		{"trace", "RUN"},
		{"trace", "RUN", "-o", filepath.Join(t.TempDir(), "t.jsonl")},
		{"logs", "RUN"},
		{"logs", "RUN", "-f"},
		{"inspect", "RUN"},
		{"follow", "RUN"},
		{"cancel", "RUN"},
		{"resume", "RUN"},
		{"resume", "RUN", "--detach"},
		{"answer", "RUN", "d1", "--value", "1"},
		{"recover", "RUN", "c1", "--applied"},
		{"delete", "RUN"},
		{"effects", "RUN"},
		{"next", "RUN"},
		{"dispatched", "RUN", "c1", "--agent", "a", "--k", "1", "--attempt", "1"},
		{"shadow", script, "--run", "RUN"},
	}
	names := map[string]string{
		id:       "no run " + id + " in the state folder " + state,
		"abcdef": "no run abcdef in the state folder " + state,
		"last":   "last: there is no run in the state folder " + state,
	}
	const next = "crw flow list names the runs there; --state DIR (or CRW_STATE) names another folder"
	for _, c := range commands {
		for ref, detail := range names {
			args := append([]string{"flow"}, c...)
			for i, a := range args {
				if a == "RUN" {
					args[i] = ref
				}
			}
			args = append(args, "--state", state)
			name := strings.Join(args[:len(args)-2], " ")

			ios, _, out, errOut := iostreams.Test()
			code := Run(args, *ios, backend.NewRegistry(fake.Descriptor()))
			assert.Equal(t, 1, code, name)
			assert.Empty(t, out.String(), name)
			assert.Equal(t, "crw: invalid_request: "+detail+"\ncrw: next: "+next+"\n", errOut.String(), name)

			ios, _, out, errOut = iostreams.Test()
			code = Run(append(args, "--json"), *ios, backend.NewRegistry(fake.Descriptor()))
			assert.Equal(t, 1, code, name+" --json")
			assert.Empty(t, errOut.String(), name+" --json")
			var got struct {
				Run   *string `json:"run"`
				Error struct {
					Code, Detail string
					Diagnostic   struct{ NextAction string }
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(out.Bytes(), &got), name+" --json: %s", out)
			assert.Nil(t, got.Run, name+" --json: no run to name")
			assert.Equal(t, "invalid_request", got.Error.Code, name+" --json")
			assert.Equal(t, detail, got.Error.Detail, name+" --json")
			assert.Equal(t, next, got.Error.Diagnostic.NextAction, name+" --json")
		}
	}
}
