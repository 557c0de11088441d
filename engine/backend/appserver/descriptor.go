package appserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/bound"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/errs"
)

// CallHeadersEnv names a model provider of Codex's configuration that is sent each call's
// identity as headers (Options.CallHeaders), for a scripted model in tests.
const CallHeadersEnv = "CRW_APPSERVER_CALL_HEADERS"

// Descriptor registers the app-server backend: its one option is the codex binary, found when
// a run is created and recorded, so every process of the run uses the same one.
func Descriptor() backend.Descriptor {
	return backend.Descriptor{
		Name:    Name,
		Summary: "real Codex turns on `codex app-server`",
		Options: []backend.Option{codex.Option},
		Prerequisites: []string{"a codex binary: the option codex, else $CRW_CODEX, else codex on PATH (" + codex.InstallCommand + ")",
			"a Codex login or API key in its CODEX_HOME, for the turns it runs"},
		Prepare: func(opts map[string]string) (map[string]string, error) {
			bin, err := codex.FindCodex(opts["codex"])
			if err != nil {
				return nil, codexMissing(opts["codex"], err)
			}
			return map[string]string{"codex": bin}, nil
		},
		Open: func(cfg backend.Config) (backend.Backend, error) {
			bin, err := codex.FindCodex(cfg.Options["codex"])
			if err != nil {
				return nil, codexMissing(cfg.Options["codex"], err)
			}
			log, runJSON := "", ""
			if cfg.Dir != "" {
				log, runJSON = filepath.Join(cfg.Dir, codex.LogFile), filepath.Join(cfg.Dir, "run.json")
			}
			o := Options{
				Codex: bin, Log: log, Cwd: cfg.Cwd, Env: cfg.Env, RunJSON: runJSON,
				CallHeaders: os.Getenv(CallHeadersEnv), Warn: cfg.Warn,
			}
			if cfg.State != "" {
				// Each thread's spawns get the run's pairs from the spawn hook, as an owner's do.
				bindings := bound.New(cfg.State)
				line := bound.Orchestrator(cfg.Run, inputs.RoleTable(cfg.Roles).Digest(), cfg.Roles)
				o.Bind = func(thread string) error {
					if !bound.ValidThread(thread) {
						return fmt.Errorf("%q is not a thread id", thread)
					}
					out, err := bindings.Bind(thread, line, func(string) bool { return true })
					if err == nil && !out.Bound {
						err = errors.New(out.Warning)
					}
					return err
				}
			}
			return New(o), nil
		},
	}
}

// codexMissing is the error of an app-server run without a codex binary; tried is the path
// given ("" when crw looked for $CRW_CODEX, then codex on PATH).
func codexMissing(tried string, err error) error {
	where := "codex is not on PATH and CRW_CODEX is not set"
	if env := os.Getenv("CRW_CODEX"); tried == "" && env != "" {
		tried = env
	}
	if tried != "" {
		where = tried + " is not an executable"
	}
	return errs.NewField(errs.CapabilityUnavailable, backend.OptionField("codex"), "", "no codex binary: %s; install it with %s, or name it (or $CRW_CODEX)", where, codex.InstallCommand).
		Wrap(err).Because("start", "codex_missing", "not_started", errs.Certain).Next(codex.InstallCommand)
}
