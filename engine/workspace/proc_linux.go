package workspace

import (
	"syscall"

	"github.com/crw-dev/crw/internal/plant"
)

// childAttr makes a git child die with crw's process: a git command crw's process started must
// not go on writing a worktree after that process was killed (SIGKILL included), while the next
// process of the run makes or removes the same folder.
func childAttr() *syscall.SysProcAttr {
	if plant.On(plant.GitOutlivesProcess) {
		return nil
	}
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
