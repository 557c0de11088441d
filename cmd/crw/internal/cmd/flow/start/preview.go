package start

import (
	"fmt"
	"io"

	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/session"
)

// preview is crw flow start --dry-run: the flags checked as a start checks them (the engine's
// Validate), and, for a session run, its spawn formats and session facts; nothing is created or
// started.
func preview(opts *Options, svc *engine.Service, st ops.Host, co engine.CreateOptions) error {
	backendOpts, err := svc.Validate(opts.Ctx, co)
	if err != nil {
		return err
	}
	out := map[string]any{"dry_run": true, "backend": co.Backend}
	var p ops.Preview
	if co.Backend == session.Name {
		p = ops.SessionPreview(st, ops.PreviewOf{Owner: backendOpts["owner"], Host: backendOpts["host"],
			CodexHome: backendOpts["codex-home"], Repo: co.Repo, Roles: co.Roles})
		out["preview"] = p
	}
	opts.Print(out, func(w io.Writer) {
		printPreview(w, co.Backend, p)
	})
	return nil
}

func printPreview(w io.Writer, backend string, p ops.Preview) {
	fmt.Fprintf(w, "a %s run would start; nothing was started\n", backend)
	if backend != session.Name {
		return
	}
	fmt.Fprintln(w, "spawn formats")
	for _, f := range p.SpawnFormats {
		fmt.Fprintf(w, "  %-12s %s\n", f.Role, f.Call)
	}
	fmt.Fprintln(w, "session facts")
	for _, f := range p.Facts {
		mark := "ok  "
		if !f.OK {
			mark = "warn"
		}
		fmt.Fprintf(w, "  %s %-22s %s\n", mark, f.Name, f.Detail)
	}
	fmt.Fprintf(w, "the steps are taken with %s\n", p.Next)
}
