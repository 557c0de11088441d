package ops

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/diagnosis"
)

// HostState adds to an inspection what this process can see of the run's host: the app
// server's log in the run's folder, and whether the owner's app server a session run reaches
// answers on its socket.
func HostState(st Host, in *diagnosis.Inspection) {
	if log := filepath.Join(st.RunDir(in.Status.Run), codex.LogFile); fileExists(log) {
		in.Backend.HostLog = log
	}
	host := in.Backend.Options["host"]
	switch {
	case in.Backend.Name != session.Name:
	case host == session.PrivateHost || host == "":
		in.Backend.Host, in.Backend.Reachable = "private", "the run starts its own app server"
	default:
		in.Backend.Host = host
		conn, err := net.DialTimeout("unix", strings.TrimPrefix(host, "unix://"), time.Second)
		if err != nil {
			in.Backend.Reachable = "unreachable: " + err.Error()
			return
		}
		conn.Close()
		in.Backend.Reachable = "reachable"
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
