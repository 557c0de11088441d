package engine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/crw-dev/crw/errs"
)

// RunLockFile is held by the one process that executes a run.
const RunLockFile = "run.lock"

// runLocks are the locks a process holds while it executes a run: its own process lock,
// taken first and let go last, and the run lock.
type runLocks struct {
	token   string // names the process lock: process.<token>.lock
	process *os.File
	run     *os.File
}

// lockRun takes a run's process lock and then its run lock; a run another process holds is
// run_unavailable.
func lockRun(dir, id string) (*runLocks, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	l := &runLocks{token: hex.EncodeToString(b[:])}
	var err error
	if l.process, err = flockFile(filepath.Join(dir, "process."+l.token+".lock"), syscall.LOCK_EX); err != nil {
		return nil, errs.New(errs.CapabilityUnavailable, "run %s: cannot take a process lock: %v", id, err)
	}
	fmt.Fprintf(l.process, "%d\n", os.Getpid())
	if l.run, err = flockFile(filepath.Join(dir, RunLockFile), syscall.LOCK_EX); err != nil {
		l.releaseProcess()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errs.New(errs.RunUnavailable, "run %s is held by another live process", id)
		}
		return nil, errs.New(errs.CapabilityUnavailable, "run %s: cannot take the run lock: %v", id, err)
	}
	return l, nil
}

func (l *runLocks) release() {
	if l.run != nil {
		_ = syscall.Flock(int(l.run.Fd()), syscall.LOCK_UN)
		l.run.Close()
	}
	l.releaseProcess()
}

func (l *runLocks) releaseProcess() {
	name := l.process.Name()
	_ = syscall.Flock(int(l.process.Fd()), syscall.LOCK_UN)
	l.process.Close()
	os.Remove(name)
}

func flockFile(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Live reports whether a process holds the run now.
func Live(state, id string) bool {
	f, err := os.OpenFile(filepath.Join(RunDir(state, id), RunLockFile), os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// ProcessLocks lists the process locks in a run's folder that a live process holds.
func ProcessLocks(state, id string) []string {
	entries, _ := os.ReadDir(RunDir(state, id))
	var held []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "process.") || !strings.HasSuffix(name, ".lock") {
			continue
		}
		f, err := os.OpenFile(filepath.Join(RunDir(state, id), name), os.O_RDONLY, 0)
		if err != nil {
			continue
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
			held = append(held, strings.TrimSuffix(strings.TrimPrefix(name, "process."), ".lock"))
		} else if err == nil {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		}
		f.Close()
	}
	return held
}
