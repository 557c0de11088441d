package ops

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/store/local"
)

// ExecCommand is the hidden command a detached run's process runs: crw flow _exec RUN.
const ExecCommand = "_exec"

// ProcessLog is a detached run process's output, in its run's folder.
const ProcessLog = "process.log"

// Launcher starts run processes as crw itself (crw flow _exec RUN), in a session of their own,
// their output appended to process.log in the run's folder on this host.
type Launcher struct {
	// RunDir is a run's folder on this host, made when missing.
	RunDir func(run string) string
	// Store are the arguments that name the store to the process: --state, and --store.
	Store []string
}

// localLauncher launches the runs of the local store st.
func localLauncher(st *local.Store) *Launcher {
	return &Launcher{RunDir: st.RunDir, Store: []string{"--state", st.Root()}}
}

// Launch starts the process of run with env in its environment.
func (l *Launcher) Launch(run string, env map[string]string) (engine.Process, error) {
	self, err := selfPath()
	if err != nil {
		return nil, err
	}
	dir := l.RunDir(run)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, ProcessLog)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(self, append([]string{"flow", ExecCommand, run}, l.Store...)...)
	cmd.Args[0] = self
	cmd.Env = withEnv(os.Environ(), env)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{pid: cmd.Process.Pid, exited: make(chan struct{}), log: logPath}
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

type process struct {
	pid    int
	exited chan struct{}
	log    string
}

func (p *process) Pid() int                { return p.pid }
func (p *process) Exited() <-chan struct{} { return p.exited }
func (p *process) Log() string             { return p.log }

// selfPath is how to start crw again: the path it was started by, which keeps the name it was
// called under.
func selfPath() (string, error) {
	self := os.Args[0]
	if !strings.Contains(self, string(filepath.Separator)) {
		return exec.LookPath(self)
	}
	return filepath.Abs(self)
}

// withEnv replaces or adds the given variables, one entry each.
func withEnv(env []string, set map[string]string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; ok {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
