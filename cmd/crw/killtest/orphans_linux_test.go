package killtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// child is a process a crw process started, as /proc showed it just before crw was killed.
type child struct {
	pid   int
	start string // its start time (field 22 of /proc/PID/stat): a pid used again is another process
	cmd   string
}

// procStat reads /proc/PID/stat's fields after the command's name: state is [0], ppid [1],
// session [3], flags [6], starttime [19].
func procStat(pid int) ([]string, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return nil, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	return f, nil
}

// childrenOf lists the git processes whose parent is pid, but those it detached. Only git:
// the invariant is that no git child writes on after its process; crw's own run processes are
// detached on purpose.
func childrenOf(pid int) []child {
	entries, _ := os.ReadDir("/proc")
	var out []child
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := procStat(p)
		if err != nil || f[1] != strconv.Itoa(pid) || f[3] == e.Name() {
			// Not its child, or one in a session of its own: a run process crw detached on
			// purpose (crw flow _exec), which outlives the command that started it.
			continue
		}
		if comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); strings.TrimSpace(string(comm)) != "git" {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, child{pid: p, start: f[19], cmd: strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))})
	}
	return out
}

// waitDead waits until every thread of process pid has exited: by then the kernel has sent
// each of its children its parent-death signal. Its main thread may be a zombie while others
// still exit (and a child a thread started is that thread's until the thread exits).
func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		f, err := procStat(pid)
		if err != nil {
			return
		}
		if tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task")); err != nil || (f[0] == "Z" || f[0] == "X") && len(tasks) <= 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still lives 5 minutes after its SIGKILL", pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// survivors are the children of a killed process that go on as if nothing happened: still
// there, not a zombie, not exiting, and no SIGKILL pending. A git child that outlives crw's process writes a
// worktree while the next process of the run makes or removes the same folder.
func survivors(children []child) []string {
	var out []string
	for _, c := range children {
		f, err := procStat(c.pid)
		if err != nil || f[19] != c.start || f[0] == "Z" || f[0] == "X" || f[3] == strconv.Itoa(c.pid) {
			// Gone, another process, a zombie, or one that has made a session of its own since
			// the snapshot: a run process crw detached, seen between its fork and its setsid.
			continue
		}
		if exiting(f) || killPending(c.pid) {
			continue
		}
		out = append(out, fmt.Sprintf("%d (%s)", c.pid, c.cmd))
	}
	return out
}

// exiting reports whether a process is on its way out (PF_EXITING in the flags of its stat):
// its pending signals may be gone already, and so may its command line.
func exiting(stat []string) bool {
	flags, err := strconv.ParseUint(stat[6], 10, 64)
	return err == nil && flags&0x4 != 0
}

// killPending reports whether SIGKILL is pending for process pid (it is dying).
func killPending(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return true // gone
	}
	for _, line := range strings.Split(string(data), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "SigPnd" && name != "ShdPnd") {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(value), 16, 64)
		if err == nil && mask&(1<<(9-1)) != 0 {
			return true
		}
	}
	return false
}
