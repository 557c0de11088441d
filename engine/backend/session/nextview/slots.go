package nextview

import (
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"

	"github.com/crw-dev/crw/userfile"
)

// DefaultMaxThreads is Codex's agents.max_threads when its configuration sets none.
const DefaultMaxThreads = 6

// MaxThreads is agents.max_threads of the Codex configuration in codexHome (default
// $CODEX_HOME, else ~/.codex): how many subagents the owner may have open at once. A missing
// or unreadable configuration is Codex's default.
func MaxThreads(codexHome string) int {
	if codexHome == "" {
		codexHome = os.Getenv("CODEX_HOME")
	}
	if codexHome == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return DefaultMaxThreads
		}
		codexHome = filepath.Join(home, ".codex")
	}
	data, err := userfile.Read(filepath.Join(codexHome, "config.toml"), 4<<20)
	if err != nil {
		return DefaultMaxThreads
	}
	var cfg struct {
		Agents struct {
			MaxThreads int `toml:"max_threads"`
		} `toml:"agents"`
	}
	if _, err := toml.Decode(string(data), &cfg); err != nil || cfg.Agents.MaxThreads < 1 {
		return DefaultMaxThreads
	}
	return cfg.Agents.MaxThreads
}
