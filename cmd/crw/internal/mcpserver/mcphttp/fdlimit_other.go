//go:build !unix

package mcphttp

// fdLimit is unknown off Unix.
func fdLimit() int { return 0 }
