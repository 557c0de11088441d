package cmdutil

import (
	"encoding/json"
	"strings"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/errs"
)

// Flags are the flags of the fields the engine's errors name (errs.FieldError; engine.Fields
// and ops.Fields list them), the one table of them: an error about a field says its flag. A
// backend's option is the flag of its name (FlagOf).
var Flags = map[string]string{
	"workflow":            "workflow", // the WORKFLOW argument
	"input":               "--input",
	"backend":             "--backend",
	"pool":                "--pool",
	"budget_tokens":       "--budget-tokens",
	"lib_dirs":            "--lib",
	"limits.stack_depth":  "--max-stack-depth",
	"limits.heap_bytes":   "--max-heap",
	"limits.load_time":    "--max-load-time",
	"limits.deadline":     "--deadline",
	"limits.prompt_bytes": "--max-prompt",
	"limits.log_bytes":    "--max-log",
	"tier_steps":          "--tier-steps",
	"tool_env":            "--tool-env",
	"tool_path":           "--tool-path",
	"repo":                "--repo",
	"head":                "--head",
	"repo_url":            "--repo-url",
	"no_repo":             "--no-repo",
	"verdict":             "--applied or --not-applied",
	"output":              "--output",
	"value":               "--value",
	"limit":               "--limit",
	"script":              "--script",
	"run":                 "--run",   // crw flow shadow's record: a run
	"trace":               "--trace", // or a trace file
}

// FlagOf is the flag of field: the table's, or --NAME for the backend option NAME (each
// option of the Factory's registry is a flag of crw flow run and start); "" for a field the
// command line has no flag for.
func FlagOf(field string) string {
	if f, ok := Flags[field]; ok {
		return f
	}
	if name, ok := strings.CutPrefix(field, backend.OptionField("")); ok && name != "" {
		return "--" + name
	}
	return ""
}

// FlagNamed is err with the field it is about (errs.FieldError) named as this command line
// gave it: as the Outcome's Given says (the file an input was read from), else by its flag.
func FlagNamed(err error, o *Outcome) error {
	return errs.Named(err, func(field string) string {
		if o != nil && o.Given[field] != "" {
			return o.Given[field]
		}
		return FlagOf(field)
	})
}

// ReadInput reads a run's input as --input gives it: inline JSON, @FILE or @- (standard
// input); "" is none (nil, which the engine takes as null). The engine checks it is JSON: an
// error about it names the file it was read from.
func (c *Common) ReadInput(s string) (json.RawMessage, error) {
	if s == "" {
		return nil, nil
	}
	data, err := ReadFlagValue("--input", s, c.IO.In)
	if err != nil {
		return nil, err
	}
	switch {
	case s == "@-":
		c.Outcome.give("input", "--input @- (stdin)")
	case strings.HasPrefix(s, "@"):
		c.Outcome.give("input", "--input "+s)
	}
	return json.RawMessage(strings.TrimSpace(string(data))), nil
}
