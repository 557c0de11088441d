package codex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/crw-dev/crw/engine/backend"
)

// ErrCodexMissing: no codex binary was found. The engine reports it as capability_unavailable
// with InstallCommand as the next action.
var ErrCodexMissing = errors.New("appserver: the codex binary is not installed")

// ErrUnavailable: the app server could not be started or did not take a session; no request
// reached it.
var ErrUnavailable = errors.New("appserver: the app server is unavailable")

// CodexVersion is the Codex CLI whose App Server protocol this backend is built and tested
// against; InstallCommand installs it.
const (
	CodexVersion   = "0.169.0"
	InstallCommand = "npm install @openai/codex@" + CodexVersion
)

// Option is --codex, the codex binary FindCodex is given: an option of the app-server backend
// and of a session run's private app server alike.
var Option = backend.Option{Name: "codex", Usage: "the codex binary of --backend app-server, and of --backend session's private app server (default $CRW_CODEX, else codex on PATH)"}

// LogFile is the stderr of a run's app server (the app-server backend's, or a session run's
// private one), in the run's folder.
const LogFile = "app-server.log"

// FindCodex finds the codex binary: path when given (--codex), else $CRW_CODEX, else codex on
// PATH. A binary that is not there is ErrCodexMissing.
func FindCodex(path string) (string, error) {
	if path == "" {
		path = os.Getenv("CRW_CODEX")
	}
	if path == "" {
		path = "codex"
	}
	found, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("%w: %v (install it with %s, or name it with --codex or CRW_CODEX)", ErrCodexMissing, err, InstallCommand)
	}
	return found, nil
}

// ServerOptions configure a Server.
type ServerOptions struct {
	Codex     string // the codex binary; "" looks for $CRW_CODEX, then codex on PATH
	CodexHome string // the app server's CODEX_HOME; "" keeps the environment's
	Log       string // the app server's stderr is appended to this file; "" discards it
	Client    ClientOptions
}

// Server is one running `codex app-server` over stdio and the client that talks to it.
type Server struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	client *Client
	exited chan struct{} // closed once the process and its group are gone
}

// StartServer starts an app server and initializes a session with it. The server runs in a
// process group of its own, so the npm launcher's native child dies with it.
func StartServer(ctx context.Context, o ServerOptions) (*Server, error) {
	bin, err := FindCodex(o.Codex)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "app-server")
	cmd.Env = os.Environ()
	if o.CodexHome != "" {
		cmd.Env = append(cmd.Env, "CODEX_HOME="+o.CodexHome)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Pipes of our own rather than StdoutPipe: Wait must not close stdout under the reader,
	// which reads to the end of what the server wrote.
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdin.Close()
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	child := []*os.File{stdinR, stdoutW} // the child's ends: closed here once it has them
	cmd.Stdin, cmd.Stdout = stdinR, stdoutW
	if o.Log != "" {
		var logFile *os.File
		if logFile, err = os.OpenFile(o.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
			child = append(child, logFile)
			cmd.Stderr = logFile
		}
	}
	if err == nil {
		err = cmd.Start()
	}
	for _, f := range child {
		f.Close()
	}
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, fmt.Errorf("%w: start %s: %v", ErrUnavailable, bin, err)
	}
	p := &Server{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		// Whatever of the group outlived its leader (the launcher's child, shell helpers)
		// holds the pipe open: end it too.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		close(p.exited)
	}()
	p.client = NewConnClient(LineConn(stdout, stdin), o.Client)
	go func() {
		<-p.client.Done()
		stdout.Close()
	}()
	if err := p.client.Initialize(ctx, "crw", Version()); err != nil {
		p.Kill()
		stdin.Close()
		return nil, fmt.Errorf("%w: initialize: %v", ErrUnavailable, err)
	}
	return p, nil
}

// Client is the client of the server's session.
func (p *Server) Client() *Client { return p.client }

// Alive tells whether the process still serves requests.
func (p *Server) Alive() bool {
	select {
	case <-p.client.Done():
		return false
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Kill ends the process group at once and waits until it is gone.
func (p *Server) Kill() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

// Stop closes the server's stdin, which makes it exit, and kills it if it has not after grace.
func (p *Server) Stop(grace time.Duration) {
	p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.Kill()
	}
}

// Version is crw's version, as it introduces itself to an app server.
func Version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "dev"
}

// Pid is the app server's process id.
func (p *Server) Pid() int { return p.cmd.Process.Pid }
