package engine

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/crw-dev/crw/errs"
)

// usableTempDir is the temporary folder a new run records (env.TMPDIR of run.json): the
// caller's $TMPDIR, else /tmp. It must be absolute, exist, be a folder and be writable.
func usableTempDir() (string, error) {
	dir := os.Getenv("TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	if err := checkTempDir(dir); err != nil {
		return "", errs.New(errs.CapabilityUnavailable, "%v", err)
	}
	return dir, nil
}

func checkTempDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("TMPDIR %q is not an absolute path", dir)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("TMPDIR %s: does not exist", dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("TMPDIR %s: not a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".crw-probe-*")
	if err != nil {
		return fmt.Errorf("TMPDIR %s: not writable", dir)
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return nil
}

// applyEnv puts the environment a run recorded into this process before it takes a lock, so
// everything the run does lands below the recorded TMPDIR whatever shell relaunched it. The
// returned function puts back what was there.
func applyEnv(spec *RunSpec) (restore func(), err error) {
	tmp, ok := spec.Env["TMPDIR"]
	if !ok {
		return func() {}, nil
	}
	if err := checkTempDir(tmp); err != nil {
		return nil, errs.New(errs.RunEnvUnusable, "run %s recorded %v; make the directory again to resume it", spec.Run, err)
	}
	old, had := os.LookupEnv("TMPDIR")
	os.Setenv("TMPDIR", tmp)
	return func() {
		if had {
			os.Setenv("TMPDIR", old)
		} else {
			os.Unsetenv("TMPDIR")
		}
	}, nil
}
