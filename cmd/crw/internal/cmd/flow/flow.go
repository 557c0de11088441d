// Package flow is crw flow: the group of commands that run, watch and inspect workflow runs.
package flow

import (
	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/answer"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/audit"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/cancel"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/check"
	deletecmd "github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/delete"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/dispatched"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/effects"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/exec"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/follow"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/inspect"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/list"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/logs"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/next"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/prune"
	recovercmd "github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/recover"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/resume"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/run"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/shadow"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/show"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/start"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/status"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/trace"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
)

// NewCmdFlow is crw flow and its subcommands.
func NewCmdFlow(f *cmdutil.Factory) *cobra.Command {
	return cmdutil.NewGroup("flow", "Run, watch and inspect workflow runs",
		run.NewCmdRun(f, nil), check.NewCmdCheck(f, nil), start.NewCmdStart(f, nil), resume.NewCmdResume(f, nil),
		follow.NewCmdFollow(f, nil), cancel.NewCmdCancel(f, nil), answer.NewCmdAnswer(f, nil), recovercmd.NewCmdRecover(f, nil),
		effects.NewCmdEffects(f, nil), inspect.NewCmdInspect(f, nil), audit.NewCmdAudit(f, nil), list.NewCmdList(f, nil),
		status.NewCmdStatus(f, nil), trace.NewCmdTrace(f, nil), show.NewCmdShow(f, nil), shadow.NewCmdShadow(f, nil),
		deletecmd.NewCmdDelete(f, nil), prune.NewCmdPrune(f, nil), logs.NewCmdLogs(f, nil), exec.NewCmdExec(f, nil),
		next.NewCmdNext(f, nil), dispatched.NewCmdDispatched(f, nil),
	)
}
