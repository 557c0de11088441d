package local

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// socketPath is a name the socket can be bound and dialled under: a unix socket's path is
// limited to about 100 bytes, and a deep state folder has longer ones, so those are reached
// through an O_PATH descriptor of the folder (/proc/self/fd/N/<name>). release closes it.
func socketPath(path string) (name string, release func(), err error) {
	if len(path) < 100 {
		return path, func() {}, nil
	}
	fd, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("/proc/self/fd/%d/%s", fd, filepath.Base(path)), func() { unix.Close(fd) }, nil
}
