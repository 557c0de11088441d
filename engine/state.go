package engine

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
)

// File names inside a run's directory.
const (
	RunFile     = "run.json"
	StateFile   = "state.json"
	JournalFile = "journal.db"
)

// Schemas of the files a run writes.
const (
	RunSchema   = "crw-flow-run/1"
	StateSchema = "crw-flow-state/1"
)

// StateDir is where runs live: $CRW_STATE, else $XDG_STATE_HOME/crw, else ~/.local/state/crw.
func StateDir(override string) (string, error) {
	if override != "" {
		return filepath.Abs(override)
	}
	if d := os.Getenv("CRW_STATE"); d != "" {
		return filepath.Abs(d)
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "crw"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errs.New(errs.CapabilityUnavailable, "no state folder: set CRW_STATE or --state (%v)", err)
	}
	return filepath.Join(home, ".local", "state", "crw"), nil
}

// RunDir is the directory of one run.
func RunDir(state, run string) string { return filepath.Join(state, "flow", run) }

var runIDPattern = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$`)

// ValidRunID reports whether id has the form of a run id.
func ValidRunID(id string) bool { return runIDPattern.MatchString(id) }

// NewRunID makes a run id that sorts by start time: 20261130-052301-a1b2c3.
func NewRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// RunSpec is run.json: what the run was started with. It is written once and never rewritten.
type RunSpec struct {
	Schema       string `json:"schema"`
	Run          string `json:"run"`
	Workflow     string `json:"workflow"`
	ScriptDigest string `json:"script_digest"`
	Backend      string `json:"backend"`
	// BackendOptions are the backend's options, as its Prepare recorded them.
	BackendOptions map[string]string `json:"backend_options,omitempty"`
	// Answers and Codex are where runs created before backend_options kept the fake's and the
	// app server's one option; ReadSpec moves them there.
	Answers      string            `json:"answers,omitempty"`
	Codex        string            `json:"codex,omitempty"`
	Cwd          string            `json:"cwd"` // where the run's threads work
	Input        json.RawMessage   `json:"input"`
	Pool         int               `json:"pool"`
	BudgetTokens int64             `json:"budget_tokens,omitempty"`
	Roles        RoleTable         `json:"roles,omitempty"`
	LibDirs      []string          `json:"lib_dirs,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	CreatedAt    time.Time         `json:"created_at"`
}

// Counts are the calls of a run by status, plus those in flight.
type Counts map[string]int

// RunState is state.json: what the process holding a run publishes for readers, since bbolt
// locks the journal against every other process.
type RunState struct {
	Schema    string            `json:"schema"`
	Run       string            `json:"run"`
	State     string            `json:"state"`               // running, paused, ended
	Replaying bool              `json:"replaying,omitempty"` // still giving the script what the journal recorded
	Status    string            `json:"status,omitempty"`
	PID       int               `json:"pid"`
	Workflow  string            `json:"workflow"`
	Backend   string            `json:"backend"`
	InFlight  int               `json:"in_flight"`
	Calls     Counts            `json:"calls"`
	Tokens    journal.Tokens    `json:"tokens"`
	LastSeq   uint64            `json:"last_seq"`
	StartedAt time.Time         `json:"started_at"`
	UpdatedAt time.Time         `json:"updated_at"`
	Result    json.RawMessage   `json:"result,omitempty"`
	Error     *journal.RunError `json:"error,omitempty"`
}

// writeFileAtomic writes a file others read: a temporary name, fsync, then rename.
func writeFileAtomic(path string, v any) error { return writeFile(path, v, true) }

// publishFile writes a file others read, without the fsync: state.json is derived from the
// journal and written often, and a reader that finds it behind the journal reads the journal.
func publishFile(path string, v any) error { return writeFile(path, v, false) }

func writeFile(path string, v any, durable bool) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ReadSpec reads a run's run.json.
func ReadSpec(state, run string) (*RunSpec, error) {
	var s RunSpec
	if err := readJSON(filepath.Join(RunDir(state, run), RunFile), &s); err != nil {
		return nil, err
	}
	if s.Schema != RunSchema {
		return nil, errs.New(errs.IncompatibleSchema, "%s: schema %q, want %q", filepath.Join(RunDir(state, run), RunFile), s.Schema, RunSchema)
	}
	for name, v := range map[string]string{"answers": s.Answers, "codex": s.Codex} {
		if v != "" {
			if s.BackendOptions == nil {
				s.BackendOptions = map[string]string{}
			}
			s.BackendOptions[name] = v
		}
	}
	s.Answers, s.Codex = "", ""
	return &s, nil
}

// ReadState reads a run's state.json.
func ReadState(state, run string) (*RunState, error) {
	var s RunState
	if err := readJSON(filepath.Join(RunDir(state, run), StateFile), &s); err != nil {
		return nil, err
	}
	return &s, nil
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return errs.New(errs.RunUnavailable, "%s does not exist", path)
	}
	if err != nil {
		return errs.New(errs.RunUnavailable, "cannot read %s: %v", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return errs.New(errs.IncompatibleSchema, "%s: %v", path, err)
	}
	return nil
}

// ListRuns returns the ids of the runs in the state folder, oldest first.
func ListRuns(state string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(state, "flow"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && ValidRunID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}
