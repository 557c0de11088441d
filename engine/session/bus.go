package session

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/crw-dev/crw/userfile"
)

// Replies a run gives a dispatch report.
const (
	ReplyBound        = "bound"         // the subagent is the step's; its rows are written
	ReplyPairMismatch = "pair_mismatch" // it runs another pair: close it and spawn again with the role's
	ReplyRetry        = "retry"         // the host or the marker turn cannot be read yet
	ReplyRefused      = "refused"       // another run, or not a subagent of the owner thread
	ReplyClose        = "close"         // an attempt that ended, a step never published, a second subagent
	ReplyQueued       = "queued"        // no process answered in time: the report waits in the inbox
)

// Report is a dispatch report: the subagent the owner started for a step.
type Report struct {
	ID      string `json:"id"` // the file's name in inbox/ and replies/
	Run     string `json:"run"`
	Call    string `json:"call"`
	Agent   string `json:"agent"`
	K       int    `json:"k"`
	Attempt int    `json:"attempt"`
}

// Marker is the step the report is for.
func (r Report) Marker() string { return Marker(r.Call, r.K, r.Attempt) }

// Reply is the run's answer to a report.
type Reply struct {
	Reply  string `json:"reply"`
	Marker string `json:"marker"`
	Agent  string `json:"agent"`
	Detail string `json:"detail,omitempty"`
	// Pair is the role's pair a pair_mismatch names.
	Model  string `json:"model,omitempty"`
	Effort string `json:"effort,omitempty"`
}

// maxFile bounds a step, report or reply file read back.
const maxFile = 1 << 20

// Bus is a run's step bus in its folder: steps/ the run publishes, inbox/ the owner's reports,
// replies/ the run's answers. Every file is written under a temporary name and renamed, so a
// reader never sees half of one.
type Bus struct{ Dir string }

func (b Bus) stepsDir(call string) string { return filepath.Join(b.Dir, "steps", call) }

// PacketPath is where the packet of a step is written.
func (b Bus) PacketPath(call string, k, attempt int) string {
	return filepath.Join(b.stepsDir(call), fmt.Sprintf("packet-t%d-a%d.md", k, attempt))
}

func (b Bus) stepPath(call string, k, attempt int) string {
	return filepath.Join(b.stepsDir(call), fmt.Sprintf("t%d-a%d.json", k, attempt))
}

// Publish writes a step's packet, then its step file: once the step file is there, the owner
// may take it.
func (b Bus) Publish(st StepFile, packet string) error {
	if err := os.MkdirAll(b.stepsDir(st.Call), 0o700); err != nil {
		return err
	}
	if packet != "" {
		if err := writeAtomic(st.Packet, []byte(packet)); err != nil {
			return err
		}
	}
	data, _ := json.MarshalIndent(st, "", "  ")
	return writeAtomic(b.stepPath(st.Call, st.K, st.Attempt), append(data, '\n'))
}

// Retract takes a step back: the owner no longer sees it. Its packet stays, for the record.
func (b Bus) Retract(call string, k, attempt int) error {
	err := os.Remove(b.stepPath(call, k, attempt))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Published reports whether a step's file is there.
func (b Bus) Published(call string, k, attempt int) bool {
	_, err := os.Lstat(b.stepPath(call, k, attempt))
	return err == nil
}

// CloseAgent publishes a close step for a subagent: one file per subagent, so two closes of
// one attempt never overwrite each other.
func (b Bus) CloseAgent(call string, attempt int, agent string) error {
	if !validName(call) || !validName(agent) {
		return fmt.Errorf("close step: %q/%q is not a call and agent id", call, agent)
	}
	if err := os.MkdirAll(b.stepsDir(call), 0o700); err != nil {
		return err
	}
	st := StepFile{Call: call, Attempt: attempt, Action: ActionClose, AgentID: agent}
	data, _ := json.MarshalIndent(st, "", "  ")
	return writeAtomic(filepath.Join(b.stepsDir(call), fmt.Sprintf("close-a%d-%s.json", attempt, agent)), append(data, '\n'))
}

// Steps reads every published step, close steps included, ordered by call and file name.
// A file that cannot be read or decoded is skipped: it is being replaced.
func (b Bus) Steps() ([]StepFile, []string, error) {
	calls, err := os.ReadDir(filepath.Join(b.Dir, "steps"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var steps []StepFile
	var paths []string
	for _, c := range calls {
		if !c.IsDir() || !validName(c.Name()) {
			continue
		}
		files, err := os.ReadDir(b.stepsDir(c.Name()))
		if err != nil {
			continue
		}
		for _, f := range files {
			name := f.Name()
			if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
				continue
			}
			path := filepath.Join(b.stepsDir(c.Name()), name)
			var st StepFile
			data, err := userfile.Read(path, maxFile)
			if err != nil || json.Unmarshal(data, &st) != nil || st.Call != c.Name() {
				continue
			}
			steps = append(steps, st)
			paths = append(paths, path)
		}
	}
	return steps, paths, nil
}

// Dispatch writes a report into the inbox and returns it with its id.
func (b Bus) Dispatch(r Report) (Report, error) {
	if !validName(r.Call) || !validName(r.Agent) || r.K < 1 || r.Attempt < 1 {
		return r, fmt.Errorf("a report names a call id, an agent id (letters, digits, - and _), --k and --attempt of 1 or more")
	}
	r.ID = fmt.Sprintf("%019d-%s", time.Now().UnixNano(), newID()) // sorts oldest first
	if err := os.MkdirAll(filepath.Join(b.Dir, "inbox"), 0o700); err != nil {
		return r, err
	}
	data, _ := json.Marshal(r)
	return r, writeAtomic(filepath.Join(b.Dir, "inbox", r.ID+".json"), data)
}

// Inbox reads the reports waiting, oldest name first; a file that is not a report is removed.
func (b Bus) Inbox() ([]Report, error) {
	dir := filepath.Join(b.Dir, "inbox")
	files, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Report
	for _, f := range files {
		name := f.Name()
		id, ok := strings.CutSuffix(name, ".json")
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		var r Report
		data, err := userfile.Read(filepath.Join(dir, name), maxFile)
		if err != nil || json.Unmarshal(data, &r) != nil || r.ID != id || !validName(id) {
			_ = os.Remove(filepath.Join(dir, name))
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Answer writes the reply to a report and takes the report out of the inbox.
func (b Bus) Answer(r Report, reply Reply) error {
	if err := os.MkdirAll(filepath.Join(b.Dir, "replies"), 0o700); err != nil {
		return err
	}
	data, _ := json.Marshal(reply)
	if err := writeAtomic(filepath.Join(b.Dir, "replies", r.ID+".json"), data); err != nil {
		return err
	}
	err := os.Remove(filepath.Join(b.Dir, "inbox", r.ID+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// ReplyTo reads the reply to a report, if there is one yet.
func (b Bus) ReplyTo(id string) (Reply, bool, error) {
	var reply Reply
	data, err := userfile.Read(filepath.Join(b.Dir, "replies", id+".json"), maxFile)
	if errors.Is(err, os.ErrNotExist) {
		return reply, false, nil
	}
	if err != nil {
		return reply, false, err
	}
	if err := json.Unmarshal(data, &reply); err != nil {
		return reply, false, fmt.Errorf("reply %s: %w", id, err)
	}
	return reply, true, nil
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeAtomic writes data to path under a temporary name and renames it into place.
func writeAtomic(path string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+newID())
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
