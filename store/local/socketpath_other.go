//go:build !linux

package local

import "fmt"

// socketPath is the name the socket is bound and dialled under: its path, which a unix socket
// holds to about 100 bytes. Linux reaches a longer one through its folder's descriptor; here
// a state folder that deep is refused.
func socketPath(path string) (name string, release func(), err error) {
	if len(path) >= 100 {
		return "", nil, fmt.Errorf("the run's socket %s is %d bytes long, more than a unix socket's path may be here: use a state folder with a shorter path (--state)", path, len(path))
	}
	return path, func() {}, nil
}
