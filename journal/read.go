package journal

// Readers of typed rows: each As… gives a row of that type as its typed kind, the fields the
// kind's Row() writes read back (the round trip every kind holds, TestTypedRowsReadBack), so
// code that reads a row names the fields of its type, not of Row's hundred.

// AsWarning reads a warning row.
func (r *Row) AsWarning() Warning {
	return Warning{Call: r.Call, Reason: r.Reason, Detail: r.Detail, DecisionID: r.DecisionID, Question: r.Question, By: r.By, OutputDigest: r.OutputDigest}
}

// AsEnd reads a terminal row other than completed.
func (r *Row) AsEnd() End { return End{Type: r.Type, Reason: r.Reason, Detail: r.Detail} }

// AsCompleted reads a completed row.
func (r *Row) AsCompleted() Completed {
	return Completed{Output: r.Output, Extracted: r.Extracted, RawText: r.RawText}
}

// AsDecisionRequested reads a decision_requested row.
func (r *Row) AsDecisionRequested() DecisionRequested {
	return DecisionRequested{ID: r.DecisionID, Question: r.Question, Node: r.Node, Schema: r.Schema}
}

// AsDecisionAnswered reads a decision_answered row.
func (r *Row) AsDecisionAnswered() DecisionAnswered {
	return DecisionAnswered{ID: r.DecisionID, By: r.By, Output: r.Output}
}

// AsReconciled reads an effect_reconciled row.
func (r *Row) AsReconciled() Reconciled {
	return Reconciled{Call: r.Effect, Verdict: r.Verdict, By: r.By, Output: r.Output, OutputDigest: r.OutputDigest}
}

// AsEscalation reads an escalation row of a call or of the run.
func (r *Row) AsEscalation() Escalation {
	return Escalation{Call: r.Call, Reason: r.Reason, Detail: r.Detail}
}

// AsInterruptRequested reads an interrupt_requested row.
func (r *Row) AsInterruptRequested() InterruptRequested {
	return InterruptRequested{Call: r.Call, Reason: r.Reason, Op: r.Op, Attempt: r.Attempt}
}

// AsThreadStarted reads a thread_started row.
func (r *Row) AsThreadStarted() ThreadStarted {
	return ThreadStarted{Call: r.Call, ThreadID: r.ThreadID, Model: r.Model, Effort: r.Effort, Cwd: r.Cwd, RolloutPath: r.RolloutPath}
}

// AsTurnStarted reads a turn_started row.
func (r *Row) AsTurnStarted() TurnStarted {
	return TurnStarted{Call: r.Call, TurnID: r.TurnID, Repair: r.Repair, PreviousAnswer: r.PreviousAnswer, K: r.K}
}

// AsCheckpointStarted reads a checkpoint_started row.
func (r *Row) AsCheckpointStarted() CheckpointStarted {
	return CheckpointStarted{Call: r.Call, ChainedFrom: r.ChainedFrom, Digest: r.ConversationDigest, Calls: r.ConversationCalls}
}

// AsAttemptLost reads a session_attempt_lost row.
func (r *Row) AsAttemptLost() AttemptLost {
	return AttemptLost{Call: r.Call, AgentID: r.AgentID, TurnID: r.TurnID, Reason: r.Reason, HostStatus: r.HostStatus,
		TurnStatus: r.TurnStatus, K: r.K, Attempt: r.Attempt}
}

// AsCommitResult reads a commit_result row.
func (r *Row) AsCommitResult() CommitResult {
	return CommitResult{Node: r.Node, Ref: r.Ref, Commit: r.Commit, Tree: r.Tree, Parent: r.Parent, Reason: r.Reason, Detail: r.Detail}
}

// AsPrepared reads a prepared row's inputs.
func (r *Row) AsPrepared() Prepared {
	return Prepared{Role: r.Role, Node: r.Node, Prompt: r.Prompt, SchemaDigest: r.SchemaDigest, Handle: r.Handle, Site: r.Site,
		RequestedPair: r.RequestedPair, ConfiguredPair: r.ConfiguredPair}
}

// AsStarted reads a started row.
func (r *Row) AsStarted() Started {
	return Started{Run: r.Run, Backend: r.Backend, Workflow: r.Workflow, ScriptDigest: r.ScriptDigest, PolicyDigest: r.PolicyDigest,
		Process: r.Process, RolePairs: r.RolePairs, Pool: r.Pool, BudgetTokens: r.BudgetTokens, Input: r.Input, OmitCallSeqs: r.OmitCallSeqs}
}

// AsEnded reads an ended row.
func (r *Row) AsEnded() Ended {
	rare := r.Rares()
	return Ended{Status: r.Status, Result: r.Result, Error: r.Error, Awaited: rare.Awaited, Paused: rare.Paused}
}

// AsCommit reads a commit_intent row.
func (r *Row) AsCommit() Commit {
	return Commit{Node: r.Node, Ref: r.Ref, Tree: r.Tree, Parent: r.Parent, Old: r.Old, Head: r.Head, Message: r.Message,
		Author: r.Author, Email: r.Email, Alloc: r.Alloc, At: r.At, Status: r.Status, Reason: r.Reason, Detail: r.Detail}
}

// AsWorkspacePlaced reads a workspace_placed row.
func (r *Row) AsWorkspacePlaced() WorkspacePlaced {
	return WorkspacePlaced{Call: r.Call, Placement: r.Placement, Node: r.Node, Start: r.Start, Commit: r.Commit, Tree: r.Tree,
		Workspace: r.Workspace, Alloc: r.Alloc}
}

// AsTierStep reads a tier_step row.
func (r *Row) AsTierStep() TierStep {
	return TierStep{Node: r.Node, Evidence: r.Evidence, Role: r.Role, Tier: r.Tier, Alloc: r.Alloc, ConfiguredPair: r.ConfiguredPair}
}

// AsResumeChanged reads a resume_changed row.
func (r *Row) AsResumeChanged() ResumeChanged {
	rare := r.Rares()
	return ResumeChanged{By: r.By, Workflow: r.Workflow, ScriptDigest: r.ScriptDigest, BackendOptions: rare.BackendOptions, Budget: rare.Budget, Files: rare.Files}
}
