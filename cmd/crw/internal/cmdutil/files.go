package cmdutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/crw-dev/crw/errs"
)

// WriteWhole writes data to path through a temporary file renamed over it, with mode
// whatever the umask.
func WriteWhole(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	fi, err := os.Lstat(path)
	if err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("it is a link")
	}
	if err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		// A device or a pipe (/dev/stdout) is written to, never replaced nor chmodded.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ExportMode reads --mode: an octal file mode, 0600 by default, as crw keeps a run's own
// files (a trace and a page hold prompts and answers).
func ExportMode(text string) (os.FileMode, error) {
	m, err := strconv.ParseUint(text, 8, 32)
	if err != nil || m > 0o777 || m&0o600 != 0o600 {
		return 0, errs.New(errs.InvalidRequest, "--mode %s: an octal mode such as 0600 or 0644 that lets its owner read and write it", text)
	}
	return os.FileMode(m), nil
}

// OutsideState refuses an output file inside the state folder root: its files are the runs'
// journals and specs, and truncating one (trace -o journal.db) would destroy a run.
func OutsideState(root, output string) error {
	resolve := func(p string) string {
		abs, err := filepath.Abs(p)
		if err != nil {
			return p
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			return real
		}
		// A file not made yet: resolve its folder.
		if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
			return filepath.Join(dir, filepath.Base(abs))
		}
		return abs
	}
	out, state := resolve(output), resolve(root)
	if rel, err := filepath.Rel(state, out); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return errs.New(errs.InvalidRequest, "--output %s: inside the state folder %s, whose files only crw writes; write the trace elsewhere", output, root)
	}
	return nil
}
