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
	"sync"
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
	// HandedClose marks a note of crw flow next, not a report: it handed out the close step of
	// Agent (of Attempt), for a run whose host cannot show a subagent closed. It gets no reply.
	HandedClose bool `json:"handed_close,omitempty"`
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

// The live index, steps/.live/<call>, names every call that may have a step, a close step or
// a bound mark on the bus, so a reader lists those calls' folders and not every call's. An
// entry is made before such a file is written and taken away only once its folder holds none,
// under liveMu: only the run's process writes the bus.
var liveMu sync.Mutex

func (b Bus) liveDir() string { return filepath.Join(b.Dir, "steps", ".live") }

// live records that call may have files on the bus; before they are written.
func (b Bus) live(call string) error {
	if err := os.MkdirAll(b.liveDir(), 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(b.stepsDir(call), 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(b.liveDir(), call), nil, 0o600)
}

// settle takes call out of the live index when its folder holds no live file any more.
func (b Bus) settle(call string) {
	files, err := os.ReadDir(b.stepsDir(call))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return
	}
	for _, f := range files {
		if isLive(f.Name()) {
			return
		}
	}
	_ = os.Remove(filepath.Join(b.liveDir(), call))
}

// isLive is a file of a call's folder that a reader of the bus takes: a step, a close step or a
// bound mark (a packet stays, for the record, and is not live).
func isLive(name string) bool {
	return !strings.HasPrefix(name, ".") && (strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".agent"))
}

// Reindex makes the live index again from every call's folder: a process does it before it
// writes the bus, so an index an older process left incomplete is whole again.
func (b Bus) Reindex() error {
	liveMu.Lock()
	defer liveMu.Unlock()
	calls, err := os.ReadDir(filepath.Join(b.Dir, "steps"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, c := range calls {
		if !c.IsDir() || !validName(c.Name()) {
			continue
		}
		files, _ := os.ReadDir(b.stepsDir(c.Name()))
		for _, f := range files {
			if isLive(f.Name()) {
				if err := b.live(c.Name()); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

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
	liveMu.Lock()
	defer liveMu.Unlock()
	if err := b.live(st.Call); err != nil {
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
	liveMu.Lock()
	defer liveMu.Unlock()
	err := os.Remove(b.stepPath(call, k, attempt))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	b.settle(call)
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
	liveMu.Lock()
	defer liveMu.Unlock()
	if err := b.live(call); err != nil {
		return err
	}
	st := StepFile{Call: call, Attempt: attempt, Action: ActionClose, AgentID: agent}
	data, _ := json.MarshalIndent(st, "", "  ")
	return writeAtomic(b.closePath(call, attempt, agent), append(data, '\n'))
}

func (b Bus) closePath(call string, attempt int, agent string) string {
	return filepath.Join(b.stepsDir(call), fmt.Sprintf("close-a%d-%s.json", attempt, agent))
}

// RetractClose takes back a close step: its subagent is closed.
func (b Bus) RetractClose(call string, attempt int, agent string) {
	liveMu.Lock()
	defer liveMu.Unlock()
	_ = os.Remove(b.closePath(call, attempt, agent))
	b.settle(call)
}

// agentPath marks the subagent bound to an attempt of a call: steps/<call>/a<n>.agent holds its
// id while the call is open, so crw flow next counts the open subagents without the journal.
func (b Bus) agentPath(call string, attempt int) string {
	return filepath.Join(b.stepsDir(call), fmt.Sprintf("a%d.agent", attempt))
}

// MarkBound records the subagent an attempt of a call is bound to.
func (b Bus) MarkBound(call string, attempt int, agent string) error {
	if !validName(call) || !validName(agent) {
		return fmt.Errorf("bound mark: %q/%q is not a call and agent id", call, agent)
	}
	liveMu.Lock()
	defer liveMu.Unlock()
	if err := b.live(call); err != nil {
		return err
	}
	return writeAtomic(b.agentPath(call, attempt), []byte(agent))
}

// Unbind takes back the mark of an attempt's subagent (attempt 0: of every attempt of the call).
func (b Bus) Unbind(call string, attempt int) {
	liveMu.Lock()
	defer liveMu.Unlock()
	defer b.settle(call)
	if attempt > 0 {
		_ = os.Remove(b.agentPath(call, attempt))
		return
	}
	marks, _ := filepath.Glob(filepath.Join(b.stepsDir(call), "a*.agent"))
	for _, m := range marks {
		_ = os.Remove(m)
	}
}

// Steps reads every published step, close steps included, ordered by call and file name.
// A file that cannot be read or decoded is skipped: it is being replaced.
func (b Bus) Steps() ([]StepFile, []string, error) {
	steps, paths, _, err := b.Read()
	return steps, paths, err
}

// Read reads the bus in one pass: every published step with its path, and the subagents
// bound to the open calls (MarkBound). It reads the folders of the calls the live index names
// (every call's on a bus without one), so its cost follows the calls in flight, not the run's.
func (b Bus) Read() (steps []StepFile, paths []string, agents []string, err error) {
	calls, err := os.ReadDir(b.liveDir())
	if errors.Is(err, os.ErrNotExist) {
		calls, err = os.ReadDir(filepath.Join(b.Dir, "steps"))
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, err
	}
	for _, c := range calls {
		if !validName(c.Name()) {
			continue
		}
		files, err := os.ReadDir(b.stepsDir(c.Name()))
		if err != nil {
			continue
		}
		for _, f := range files {
			name := f.Name()
			if strings.HasSuffix(name, ".agent") && !strings.HasPrefix(name, ".") {
				if data, err := userfile.Read(filepath.Join(b.stepsDir(c.Name()), name), 256); err == nil && validName(string(data)) {
					agents = append(agents, string(data))
				}
				continue
			}
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
	return steps, paths, agents, nil
}

// Dispatch writes a report into the inbox and returns it with its id.
func (b Bus) Dispatch(r Report) (Report, error) {
	if !validName(r.Call) || !validName(r.Agent) || r.K < 1 || r.Attempt < 1 {
		return r, fmt.Errorf("a report names a call id, an agent id (letters, digits, - and _), --k and --attempt of 1 or more")
	}
	return b.deliver(r)
}

// deliver writes a report into the inbox under a new id, which sorts oldest first.
func (b Bus) deliver(r Report) (Report, error) {
	r.ID = fmt.Sprintf("%019d-%s", time.Now().UnixNano(), newID())
	if err := os.MkdirAll(filepath.Join(b.Dir, "inbox"), 0o700); err != nil {
		return r, err
	}
	data, _ := json.Marshal(r)
	return r, writeAtomic(filepath.Join(b.Dir, "inbox", r.ID+".json"), data)
}

// HandedOut notes in the inbox that crw flow next handed out a close step.
func (b Bus) HandedOut(run string, st StepFile) error {
	if !validName(st.Call) || !validName(st.AgentID) {
		return fmt.Errorf("close step: %q/%q is not a call and agent id", st.Call, st.AgentID)
	}
	_, err := b.deliver(Report{Run: run, Call: st.Call, Agent: st.AgentID, Attempt: st.Attempt, HandedClose: true})
	return err
}

// Drop takes a note out of the inbox without a reply.
func (b Bus) Drop(r Report) {
	_ = os.Remove(filepath.Join(b.Dir, "inbox", r.ID+".json"))
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
