package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

// examples are the Examples of --help for the commands whose definition gives none, by their
// path below crw.
var examples = map[string]string{
	"flow": `  crw flow run workflows/plan-build-review.js
  crw flow status last`,
	"flow run": `  crw flow run workflows/plan-build-review.js
  crw flow run wf.js --input '{"task": "Add a --verbose flag"}' --answers answers.json --json
  crw flow run wf.ts --backend app-server --roles roles.json --repo ../myrepo`,
	"flow start": `  crw flow start wf.js --input @input.json
  crw flow start wf.js --backend fake --answers answers.json
  crw flow start wf.js --dry-run`,
	"flow follow": `  crw flow follow last
  crw flow follow RUN --json`,
	"flow cancel": `  crw flow cancel RUN
  crw flow cancel last --wait 2m`,
	"flow effects": `  crw flow effects
  crw flow effects RUN --json`,
	"flow inspect": `  crw flow inspect last
  crw flow inspect RUN --json`,
	"flow audit": `  crw flow audit
  crw flow audit RUN --limit 20 --json`,
	"flow status": `  crw flow status last
  crw flow status RUN --json`,
	"flow trace": `  crw flow trace RUN
  crw flow trace last -o run.jsonl`,
	"flow shadow": `  crw flow shadow edited.js --run RUN
  crw flow shadow edited.js --trace run.jsonl --json`,
	"flow delete": `  crw flow delete RUN
  crw flow rm last`,
	"flow next": `  crw flow next RUN
  crw flow next RUN --wait 30s --json`,
	"flow dispatched": `  crw flow dispatched RUN c3 --agent 019a... --k 1 --attempt 1`,
	"schema":          `  crw schema check schema.json`,
	"schema check": `  crw schema check schema.json
  crw schema check schema.json --json`,
	"codex": `  crw codex setup
  crw codex setup --check`,
	"codex setup": `  crw codex setup
  crw codex setup --codex-home ~/.codex --roles roles.json
  crw codex setup --check`,
	"codex hook": `  # run by Codex itself, from the hook crw codex setup writes into hooks.json
  crw codex hook --state ~/.local/state/crw < event.json`,
}

// withExamples gives each command without Examples of its own the ones above.
func withExamples(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Example == "" {
			c.Example = examples[strings.TrimPrefix(c.CommandPath(), root.Name()+" ")]
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
