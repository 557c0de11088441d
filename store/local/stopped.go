package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/crw-dev/crw/errs"
)

// holderLook is how long a reader waits for the holder's next line before it looks whether
// the holder is stopped: a running holder answers at once, and one that is stopped (SIGSTOP,
// a suspended terminal) would keep every status and show waiting readerTimeout.
const holderLook = time.Second

// StoppedHolder is the pid of the process that holds run when that process is stopped, and
// true; 0 and false when it runs, is gone, or cannot be looked at (no /proc).
func StoppedHolder(root, run string) (int, bool) {
	for _, token := range ProcessLocks(root, run) {
		data, err := os.ReadFile(filepath.Join(root, "flow", run, "process."+token+".lock"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(string(bytes.TrimSpace(data)))
		if err != nil || pid <= 0 {
			continue
		}
		if processStopped(pid) {
			return pid, true
		}
	}
	return 0, false
}

// HolderStopped says whether the process that holds run is stopped (see StoppedHolder).
func (s *Store) HolderStopped(run string) bool {
	_, stopped := StoppedHolder(s.root, run)
	return stopped
}

// processStopped reads a process's state from /proc: T (stopped) or t (stopped by a tracer).
func processStopped(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses, so the state follows the last ")".
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	return stat[i+2] == 'T' || stat[i+2] == 't'
}

// holderLine reads the holder's next line: after holderLook without it, a holder that is
// stopped is said at once (holder_stopped); one that runs is waited for up to readerTimeout
// in all (holder_unresponsive past it).
func (s *Store) holderLine(ctx context.Context, conn net.Conn, br *bufio.Reader, run string) ([]byte, error) {
	start := time.Now()
	var line []byte
	for {
		wait := holderLook
		if looked := time.Since(start); looked >= holderLook {
			wait = readerTimeout - looked
		}
		conn.SetReadDeadline(time.Now().Add(max(wait, time.Millisecond)))
		part, err := br.ReadBytes('\n')
		line = append(line, part...)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || ctx.Err() != nil {
			return line, err // a line, the holder gone, or the caller's context ended
		}
		if pid, stopped := StoppedHolder(s.root, run); stopped {
			return nil, errs.New(errs.RunUnavailable, "run %s: the process that holds it (pid %d) is stopped, and answers nothing until it is continued", run, pid).Wrap(err).
				Because("store", "holder_stopped", "unknown", errs.Uncertain).Next(fmt.Sprintf("continue it (kill -CONT %d, or fg in its terminal), or end it (kill %d) and crw flow resume %s", pid, pid, run))
		}
		if time.Since(start) >= readerTimeout {
			return nil, errs.New(errs.RunUnavailable, "run %s: the process that holds it does not answer", run).Wrap(err).
				Because("store", "holder_unresponsive", "unknown", errs.Uncertain).Next("see whether the process that holds the run is stuck: crw flow status " + run)
		}
	}
}
