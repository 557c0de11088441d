package backend

import (
	"os"
	"sort"
	"strings"
)

// PathTail ends the PATH a run records (run.json's env): its directories go before the
// shell's own PATH.
const PathTail = ":$PATH"

// ProcessEnv is a recorded env as a process puts it into its own: a recorded PATH's
// directories before the process's PATH.
func ProcessEnv(env map[string]string) map[string]string {
	out := make(map[string]string, len(env))
	for k, v := range env {
		if dirs, ok := strings.CutSuffix(v, PathTail); ok && k == "PATH" {
			v = dirs
			switch cur := os.Getenv("PATH"); {
			case cur == dirs || strings.HasPrefix(cur, dirs+":"):
				v = cur // this process put them there already
			case cur != "":
				v += ":" + cur
			}
		}
		out[k] = v
	}
	return out
}

// EnvNames are a recorded env's names in the order the tools section gives them: TMPDIR first,
// then PATH, then the rest by name.
func EnvNames(env map[string]string) []string {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	rank := func(k string) int {
		switch k {
		case "TMPDIR":
			return 0
		case "PATH":
			return 1
		}
		return 2
	}
	sort.Slice(names, func(i, j int) bool {
		if rank(names[i]) != rank(names[j]) {
			return rank(names[i]) < rank(names[j])
		}
		return names[i] < names[j]
	})
	return names
}
