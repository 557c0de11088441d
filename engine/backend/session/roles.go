package session

import (
	"embed"
	"strings"
)

// The roles' overlays: what each role's subagent is told it is for, shipped with crw. A packet
// carries its role's, and crw codex setup writes each into its role file in Codex.
//
//go:embed roles/*.md
var overlays embed.FS

// Overlay is a role's overlay, "" for a role crw ships none for.
func Overlay(role string) string {
	data, err := overlays.ReadFile("roles/" + role + ".md")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
