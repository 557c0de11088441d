//go:build !linux

package workspace

import "syscall"

// childAttr: only Linux kills a child when its parent dies; elsewhere a git child a killed
// process started may outlive it, and a resume finds the worktree it made half made.
func childAttr() *syscall.SysProcAttr { return nil }
