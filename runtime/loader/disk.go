package loader

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/crw-dev/crw/userfile"
)

// disk is where a workflow's own files are found and read: the host's file system, or the
// files a run keeps (Config.Kept).
type disk interface {
	isFile(p string) bool
	isDir(p string) bool
	// realPath is p with its symlinks resolved.
	realPath(p string) (string, error)
	read(p string, limit int64) ([]byte, error)
}

// hostDisk is the host's file system.
type hostDisk struct{}

func (hostDisk) isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func (hostDisk) isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func (hostDisk) realPath(p string) (string, error)          { return filepath.EvalSymlinks(p) }
func (hostDisk) read(p string, limit int64) ([]byte, error) { return userfile.Read(p, limit) }

// keptDisk is a run's kept files, by the real path each was loaded from: no other file exists
// on it, and a path is its own real path.
type keptDisk map[string][]byte

func (k keptDisk) isFile(p string) bool {
	_, ok := k[p]
	return ok
}

// isDir: any path that is no kept file is a folder, empty unless kept files lie under it (a
// lib folder the run named, from which it loaded nothing, is one).
func (k keptDisk) isDir(p string) bool { return !k.isFile(p) }

func (k keptDisk) realPath(p string) (string, error) { return p, nil }

func (k keptDisk) read(p string, limit int64) ([]byte, error) {
	data, ok := k[p]
	if !ok {
		return nil, fmt.Errorf("%s is not among the run's kept files", p)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is %d bytes, past the %d a module may take", p, len(data), limit)
	}
	return data, nil
}
