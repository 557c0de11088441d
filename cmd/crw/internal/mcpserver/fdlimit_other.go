//go:build !unix

package mcpserver

// fdLimit is unknown off Unix.
func fdLimit() int { return 0 }
