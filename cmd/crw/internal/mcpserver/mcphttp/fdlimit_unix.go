//go:build unix

package mcphttp

import "syscall"

// fdLimit is how many descriptors the process may open (0: unknown). Go raises the soft limit
// to the hard one at start on Linux and macOS.
func fdLimit() int {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil || l.Cur > 1<<30 {
		return 0
	}
	return int(l.Cur)
}
