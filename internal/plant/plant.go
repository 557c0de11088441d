// Package plant holds the bugs a simulation must be able to find, each behind a name. In a
// build without the crwplant tag every bug is off and On is a constant false the compiler
// removes; with it (go test -tags crwplant), CRW_PLANT names the bugs a process plants,
// comma-separated, and Set plants them in a test's own process. docs/simulation.md lists them
// with the seeds that find each.
package plant

// The planted bugs, each the undoing of a fix.
const (
	// VerdictKeepsHolds: a verdict does not release the node's recovery hold for crw.commit
	// and crw.tierStep (the holds the script was told of are kept).
	VerdictKeepsHolds = "verdict_keeps_holds"
	// PlaceUnderCall: a call's worktree is made under the call's own context, so a pause, a
	// cancel or a deadline kills git halfway and ends the call worktree_failed.
	PlaceUnderCall = "place_under_call"
	// DecisionByQuestion: a decision is matched by its question text, so a question built from
	// a result a resume got anew is taken for a divergence.
	DecisionByQuestion = "decision_by_question"
	// ResumeSkipsPause: a resume takes a call a pause held for settled and gives the held
	// result again instead of running the call again.
	ResumeSkipsPause = "resume_skips_pause"
	// GitOutlivesProcess: a git child is not killed with crw's process, and goes on writing a
	// worktree the next process makes or removes.
	GitOutlivesProcess = "git_outlives_process"
	// ShadowCommitsWithoutRepo: the shadow of a run without a repository answers crw.commit
	// from the record, which has no commit there, where the run threw invalid_request.
	ShadowCommitsWithoutRepo = "shadow_commits_without_repo"
	// DecisionNotAskedAnew: a decision the process that held a call a pause held asked after
	// the held row, its schema built from the held result, is compared with the schema a
	// resume that ran the call again builds: the resume stops there, for good.
	DecisionNotAskedAnew = "decision_not_asked_anew"
)

// All is every planted bug, in the order docs/simulation.md lists them.
var All = []string{VerdictKeepsHolds, PlaceUnderCall, DecisionByQuestion, ResumeSkipsPause, GitOutlivesProcess, ShadowCommitsWithoutRepo, DecisionNotAskedAnew}
