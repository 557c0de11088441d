// Package bus is a session run's step bus: the files the owner and crw exchange in the run's
// folder. The run publishes steps (steps/<call>/, each with its packet, the self-contained task
// its subagent reads); the owner reports the subagents it started for them (inbox/); the run
// answers each report (replies/). The markers that tie a subagent's turn to its step, and the
// messages a step sends, are here too.
package bus

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
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

// ErrDamaged is wrapped by the error of a bus folder crw did not make: a symlink or a file where
// a folder should be, or a folder with more entries than crw writes there. A subagent's
// workspace is inside the run's folder, so the bus never follows a link it did not make: one
// could send its writes and removes anywhere.
var ErrDamaged = errors.New("the run's step bus is damaged")

// maxEntries bounds the entries of one bus folder that are read: a call's folder holds a few
// steps, packets and marks, the inbox the reports of the steps in flight.
const maxEntries = 4096

// dir is the bus folder at rel (slash-separated) in the run's folder, each folder on its way
// checked to be a real folder; create makes the missing ones. A missing folder is os.ErrNotExist.
func (b Bus) dir(create bool, rel string) (string, error) {
	p := b.Dir
	for _, part := range strings.Split(rel, "/") {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) && create {
			if err = os.Mkdir(p, 0o700); err == nil || errors.Is(err, os.ErrExist) {
				fi, err = os.Lstat(p)
			}
		}
		if err != nil {
			return "", err
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("%w: %s is not a folder but %s", ErrDamaged, p, kindOf(fi.Mode()))
		}
	}
	return p, nil
}

func kindOf(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "a link"
	case m.IsRegular():
		return "a file"
	}
	return "a " + m.Type().String() + " file"
}

// callDir is a call's folder on the bus; the call must be a valid name.
func (b Bus) callDir(create bool, call string) (string, error) {
	if !ValidName(call) {
		return "", fmt.Errorf("%w: %q is not a call id", ErrDamaged, call)
	}
	return b.dir(create, "steps/"+call)
}

// list reads at most maxEntries entries of a bus folder, sorted by name.
func list(dir string) ([]os.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(maxEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(entries) > maxEntries {
		return nil, fmt.Errorf("%w: %s holds more than %d entries", ErrDamaged, dir, maxEntries)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, nil
}

// The live index, steps/.live/<call>, names every call that may have a step, a close step or
// a bound mark on the bus, so a reader lists those calls' folders and not every call's. An
// entry is made before such a file is written and taken away only once its folder holds none,
// under liveMu: only the run's process writes the bus.
var liveMu sync.Mutex

// live records that call may have files on the bus; before they are written. It returns the
// call's folder.
func (b Bus) live(call string) (string, error) {
	dir, err := b.callDir(true, call)
	if err != nil {
		return "", err
	}
	index, err := b.dir(true, "steps/.live")
	if err != nil {
		return "", err
	}
	// Neither truncated nor followed: an entry is an empty file, and a link there is not crw's.
	f, err := os.OpenFile(filepath.Join(index, call), os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return "", err
	}
	return dir, f.Close()
}

// settle takes call out of the live index when its folder holds no live file any more.
func (b Bus) settle(call string) {
	dir, err := b.callDir(false, call)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return
	}
	if err == nil {
		files, err := list(dir)
		if err != nil {
			return
		}
		for _, f := range files {
			if isLive(f.Name()) {
				return
			}
		}
	}
	if index, err := b.dir(false, "steps/.live"); err == nil {
		_ = os.Remove(filepath.Join(index, call))
	}
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
	steps, err := b.dir(false, "steps")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	calls, err := os.ReadDir(steps) // every call the run made: not bounded by maxEntries
	if err != nil {
		return err
	}
	for _, c := range calls {
		if !c.IsDir() || !ValidName(c.Name()) {
			continue
		}
		dir, err := b.callDir(false, c.Name())
		if err != nil {
			continue
		}
		files, _ := list(dir)
		for _, f := range files {
			if isLive(f.Name()) {
				if _, err := b.live(c.Name()); err != nil {
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
	dir, err := b.live(st.Call)
	if err != nil {
		return err
	}
	if packet != "" {
		if filepath.Dir(st.Packet) != dir {
			return fmt.Errorf("step %s: its packet %s is not in %s", st.Marker, st.Packet, dir)
		}
		if err := writeAtomic(st.Packet, []byte(packet)); err != nil {
			return err
		}
	}
	data, _ := json.MarshalIndent(st, "", "  ")
	return writeAtomic(b.stepPath(st.Call, st.K, st.Attempt), append(data, '\n'))
}

// Attach writes a file beside a call's steps (a continuation's copy of the answer it goes on
// from) and returns its path. name is one plain file name.
func (b Bus) Attach(call, name string, data []byte) (string, error) {
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("attachment %q: not a plain file name", name)
	}
	liveMu.Lock()
	defer liveMu.Unlock()
	dir, err := b.live(call)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, writeAtomic(path, data)
}

// Retract takes a step back: the owner no longer sees it. Its packet stays, for the record.
func (b Bus) Retract(call string, k, attempt int) error {
	liveMu.Lock()
	defer liveMu.Unlock()
	if _, err := b.callDir(false, call); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	err := os.Remove(b.stepPath(call, k, attempt))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	b.settle(call)
	return err
}

// Published reports whether a step's file is there.
func (b Bus) Published(call string, k, attempt int) bool {
	if _, err := b.callDir(false, call); err != nil {
		return false
	}
	_, err := os.Lstat(b.stepPath(call, k, attempt))
	return err == nil
}

// PacketWritten reports whether a step of the marker was ever published: its packet, which a
// retraction leaves for the record, is there.
func (b Bus) PacketWritten(call string, k, attempt int) bool {
	if _, err := b.callDir(false, call); err != nil {
		return false
	}
	_, err := os.Lstat(b.PacketPath(call, k, attempt))
	return err == nil
}

// CloseDetail is the detail of a close reply to a report whose marker no step waits under:
// whether the marker's attempt ended or no step was ever published under it.
func (b Bus) CloseDetail(r Report) string {
	if b.PacketWritten(r.Call, r.K, r.Attempt) {
		return "the attempt of this marker ended (it was answered, or lost and spawned again): close the subagent"
	}
	return "the run never published a step under this marker (a report before its step, or a marker of no step): close the subagent"
}

// CloseAgent publishes a close step for a subagent: one file per subagent, so two closes of
// one attempt never overwrite each other.
func (b Bus) CloseAgent(call string, attempt int, agent string) error {
	if !ValidName(call) || !ValidName(agent) {
		return fmt.Errorf("close step: %q/%q is not a call and agent id", call, agent)
	}
	liveMu.Lock()
	defer liveMu.Unlock()
	if _, err := b.live(call); err != nil {
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
	if !ValidName(agent) {
		return
	}
	liveMu.Lock()
	defer liveMu.Unlock()
	if _, err := b.callDir(false, call); err != nil {
		return
	}
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
	if !ValidName(call) || !ValidName(agent) {
		return fmt.Errorf("bound mark: %q/%q is not a call and agent id", call, agent)
	}
	liveMu.Lock()
	defer liveMu.Unlock()
	if _, err := b.live(call); err != nil {
		return err
	}
	return writeAtomic(b.agentPath(call, attempt), []byte(agent))
}

// Unbind takes back the mark of an attempt's subagent (attempt 0: of every attempt of the call).
func (b Bus) Unbind(call string, attempt int) {
	liveMu.Lock()
	defer liveMu.Unlock()
	dir, err := b.callDir(false, call)
	if err != nil {
		return
	}
	defer b.settle(call)
	if attempt > 0 {
		_ = os.Remove(b.agentPath(call, attempt))
		return
	}
	files, _ := list(dir)
	for _, f := range files {
		if name := f.Name(); strings.HasPrefix(name, "a") && strings.HasSuffix(name, ".agent") {
			_ = os.Remove(filepath.Join(dir, name))
		}
	}
}

// Steps reads every published step, close steps included, ordered by call and file name.
// A file that cannot be read or decoded is skipped: it is being replaced.
func (b Bus) Steps() ([]StepFile, []string, error) {
	steps, paths, _, err := b.Read()
	return steps, paths, err
}

// maxRead bounds what one Read takes in of step files, whatever their number.
const maxRead = 64 << 20

// Read reads the bus in one pass: every published step with its path, and the subagents
// bound to the open calls (MarkBound). It reads the folders of the calls the live index names
// (every call's on a bus without one), so its cost follows the calls in flight, not the run's.
// A file that is not a step (a name or member out of form) is passed over; a folder that is not
// crw's, or steps past maxRead, are ErrDamaged.
func (b Bus) Read() (steps []StepFile, paths []string, agents []string, err error) {
	index, err := b.dir(false, "steps/.live")
	if errors.Is(err, os.ErrNotExist) {
		index, err = b.dir(false, "steps")
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, err
	}
	calls, err := os.ReadDir(index)
	if err != nil {
		return nil, nil, nil, err
	}
	read := int64(0)
	for _, c := range calls {
		if !ValidName(c.Name()) {
			continue
		}
		dir, err := b.callDir(false, c.Name())
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, nil, err
		}
		files, err := list(dir)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, f := range files {
			name := f.Name()
			if strings.HasPrefix(name, ".") || !f.Type().IsRegular() {
				continue
			}
			path := filepath.Join(dir, name)
			if strings.HasSuffix(name, ".agent") {
				if data, err := userfile.Read(path, 256); err == nil && ValidName(string(data)) {
					agents = append(agents, string(data))
				}
				continue
			}
			if !strings.HasSuffix(name, ".json") {
				continue
			}
			if read += fileSize(f); read > maxRead {
				return nil, nil, nil, fmt.Errorf("%w: its steps hold more than %d MiB", ErrDamaged, maxRead>>20)
			}
			var st StepFile
			data, err := userfile.Read(path, maxFile)
			if err != nil || json.Unmarshal(data, &st) != nil || !st.wellFormed(c.Name()) {
				continue
			}
			steps = append(steps, st)
			paths = append(paths, path)
		}
	}
	return steps, paths, agents, nil
}

func fileSize(f os.DirEntry) int64 {
	if info, err := f.Info(); err == nil {
		return info.Size()
	}
	return 0
}

// wellFormed tells whether a step read back is one the run writes in call's folder: its call,
// the names it carries safe as file names' parts, and its action one of the bus's.
func (st StepFile) wellFormed(call string) bool {
	if st.Call != call || st.Attempt < 1 || st.AgentID != "" && !ValidName(st.AgentID) {
		return false
	}
	switch st.Action {
	case ActionClose:
		return st.AgentID != ""
	case ActionSpawn, ActionSendInput:
		return st.K >= 1 && st.Marker == Marker(st.Call, st.K, st.Attempt) && (st.Action == ActionSpawn || st.AgentID != "")
	}
	return false
}

// Check tells whether a report is one the owner can make: a call id, an agent id, k and attempt.
func (r Report) Check() error {
	if !ValidName(r.Call) || !ValidName(r.Agent) || r.K < 1 || r.Attempt < 1 {
		return fmt.Errorf("a report names a call id, an agent id (letters, digits, - and _), --k and --attempt of 1 or more")
	}
	return nil
}

// Dispatch writes a report into the inbox and returns it with its id.
func (b Bus) Dispatch(r Report) (Report, error) {
	if err := r.Check(); err != nil {
		return r, err
	}
	r.ID = fmt.Sprintf("%019d-%s", time.Now().UnixNano(), newID()) // sorts oldest first
	return r, b.deliver(r)
}

// deliver writes a report into the inbox under its id.
func (b Bus) deliver(r Report) error {
	dir, err := b.dir(true, "inbox")
	if err != nil {
		return err
	}
	data, _ := json.Marshal(r)
	return writeAtomic(filepath.Join(dir, r.ID+".json"), data)
}

// HandedOut notes in the inbox that crw flow next handed out a close step: one note a close
// step, however often it is handed out.
func (b Bus) HandedOut(run string, st StepFile) error {
	if !ValidName(st.Call) || !ValidName(st.AgentID) {
		return fmt.Errorf("close step: %q/%q is not a call and agent id", st.Call, st.AgentID)
	}
	id := fmt.Sprintf("close-%s-a%d-%s", st.Call, st.Attempt, st.AgentID)
	if !ValidName(id) {
		return fmt.Errorf("close step: %s/%s: the names are too long for a note", st.Call, st.AgentID)
	}
	return b.deliver(Report{ID: id, Run: run, Call: st.Call, Agent: st.AgentID, Attempt: st.Attempt, HandedClose: true})
}

// Drop takes a note out of the inbox without a reply.
func (b Bus) Drop(r Report) {
	if dir, err := b.dir(false, "inbox"); err == nil && ValidName(r.ID) {
		_ = os.Remove(filepath.Join(dir, r.ID+".json"))
	}
}

// Inbox reads the reports waiting, oldest name first (at most maxEntries of them, the rest at
// a later read); a regular file that is not a report is removed.
func (b Bus) Inbox() ([]Report, error) {
	dir, err := b.dir(false, "inbox")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	files, err := f.ReadDir(maxEntries)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	var out []Report
	for _, f := range files {
		name := f.Name()
		id, ok := strings.CutSuffix(name, ".json")
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		var r Report
		data, err := userfile.Read(path, maxFile)
		if err != nil || json.Unmarshal(data, &r) != nil || r.ID != id || !ValidName(id) {
			_ = os.Remove(path) // a link is removed, never what it names
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Answer writes the reply to a report and takes the report out of the inbox.
func (b Bus) Answer(r Report, reply Reply) error {
	if !ValidName(r.ID) {
		return fmt.Errorf("%w: %q is not a report id", ErrDamaged, r.ID)
	}
	dir, err := b.dir(true, "replies")
	if err != nil {
		return err
	}
	data, _ := json.Marshal(reply)
	if err := writeAtomic(filepath.Join(dir, r.ID+".json"), data); err != nil {
		return err
	}
	b.Drop(r)
	return nil
}

// ReplyTo reads the reply to a report, if there is one yet, and takes it out of replies/: the
// command that wrote the report is its one reader.
func (b Bus) ReplyTo(id string) (Reply, bool, error) {
	var reply Reply
	if !ValidName(id) {
		return reply, false, fmt.Errorf("%q is not a report id", id)
	}
	dir, err := b.dir(false, "replies")
	if errors.Is(err, os.ErrNotExist) {
		return reply, false, nil
	}
	if err != nil {
		return reply, false, err
	}
	path := filepath.Join(dir, id+".json")
	data, err := userfile.Read(path, maxFile)
	if errors.Is(err, os.ErrNotExist) {
		return reply, false, nil
	}
	if err != nil {
		return reply, false, err
	}
	if err := json.Unmarshal(data, &reply); err != nil {
		return reply, false, fmt.Errorf("reply %s: %w", id, err)
	}
	_ = os.Remove(path)
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
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
