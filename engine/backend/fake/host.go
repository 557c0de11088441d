package fake

import (
	"encoding/json"
	"os"
	"sync"
)

// Host is the fake host: the party that receives turns. It outlives the engine's process as a
// real host does, and keeps count of every turn it received, so tests can prove that no turn
// is ever sent twice, across crashes and resumes included. With a log file the count survives
// the process: each turn received appends a line {"turn": ID, "tmpdir": TMPDIR, "run": RUN},
// TMPDIR being the temporary folder of the process that sent it, which a real host's child
// processes would inherit, and RUN the run whose process it is (turn ids are a run's own). The host a run's own process opens (Descriptor, New without a host) counts
// nothing in memory: nobody could read the count, and it would grow with every turn.
type Host struct {
	mu      sync.Mutex
	sends   map[string]int
	prompts map[string]string
	log     string
	run     string // the run a run process's host serves, named in its log's lines
}

// NewHost returns a host that appends to log ("" keeps the count in memory only).
func NewHost(log string) *Host {
	return &Host{sends: map[string]int{}, prompts: map[string]string{}, log: log}
}

// Prompt is the text the host received for a turn ("" for a turn it never received).
func (h *Host) Prompt(turnID string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.prompts[turnID]
}

// Sends is how many times the host received the turn.
func (h *Host) Sends(turnID string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sends[turnID]
}

// Received lists every turn received, with its count.
func (h *Host) Received() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.sends))
	for k, v := range h.sends {
		out[k] = v
	}
	return out
}

// HostLine is one line of a host's log.
type HostLine struct {
	Turn   string `json:"turn"`
	TmpDir string `json:"tmpdir"`
	Run    string `json:"run,omitempty"`
}

// logOnlyHost returns a host that keeps no count in memory, only the log's lines ("" none), of
// run's turns.
func logOnlyHost(log, run string) *Host { return &Host{log: log, run: run} }

func (h *Host) receive(turnID, prompt string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sends != nil {
		h.sends[turnID]++
		h.prompts[turnID] = prompt
	}
	if h.log == "" {
		return
	}
	line, _ := json.Marshal(HostLine{Turn: turnID, TmpDir: os.Getenv("TMPDIR"), Run: h.run})
	f, err := os.OpenFile(h.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	// One write of a whole line with O_APPEND: lines of concurrent processes never interleave.
	_, _ = f.Write(append(line, '\n'))
	f.Close()
}
