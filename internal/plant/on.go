//go:build crwplant

package plant

import (
	"os"
	"strings"
	"sync"
)

// Enabled reports whether this build can plant bugs.
const Enabled = true

var (
	mu      sync.RWMutex
	planted = fromEnv()
)

func fromEnv() map[string]bool {
	m := map[string]bool{}
	for _, name := range strings.Split(os.Getenv("CRW_PLANT"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			m[name] = true
		}
	}
	return m
}

// On reports whether the bug named is planted.
func On(name string) bool {
	mu.RLock()
	defer mu.RUnlock()
	return planted[name]
}

// Set plants exactly the bugs named in this process (none: every bug is off again).
func Set(names ...string) {
	mu.Lock()
	defer mu.Unlock()
	planted = map[string]bool{}
	for _, n := range names {
		planted[n] = true
	}
}
