// Package roles is what crw ships of the session backend's six roles: each role's overlay (what
// its subagent is told it is for) and the Codex agent type its subagent is spawned as. A packet
// carries its role's overlay, and crw codex setup writes each into its role file in Codex.
package roles

import (
	"embed"
	"strings"
)

// The roles' overlays, shipped with crw.
//
//go:embed *.md
var overlays embed.FS

// Overlay is a role's overlay, "" for a role crw ships none for.
func Overlay(role string) string {
	data, err := overlays.ReadFile(role + ".md")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// AgentType is the Codex agent_type a role's subagent is spawned as: executor-t1 runs as an
// executor and the critic as a reviewer; every other role under its own name.
func AgentType(role string) string {
	switch role {
	case "executor-t1":
		return "executor"
	case "critic":
		return "reviewer"
	}
	return role
}
