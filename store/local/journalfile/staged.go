package journalfile

import (
	"maps"
	"slices"

	"github.com/crw-dev/crw/journal"
)

// staged is the index one commit's fold works on: a record the batch touches is read from its
// bucket at most once and written back once, when the fold is done. A call's rows mostly
// reach the same commit (its prepared, thread and turn rows before its turn is sent), so the
// fold read, decoded, encoded and put its open record once a row before.
type staged struct {
	disk    callStates
	open    records[journal.OpenCall]
	unknown records[journal.UnknownCall]
	states  map[string]*stagedState
}

// stagedRecord is a record as the fold left it: v nil when there is none; dirty when the fold
// changed it.
type stagedRecord[T any] struct {
	v     *T
	dirty bool
}

type stagedState struct {
	prepared bool
	status   journal.CallStatus
	dirty    bool
}

var _ journal.Index = (*staged)(nil)

func stage(disk callStates) *staged {
	return &staged{disk: disk, open: records[journal.OpenCall]{}, unknown: records[journal.UnknownCall]{},
		states: map[string]*stagedState{}}
}

// records are the fold's records of one bucket, each read from it at most once.
type records[T any] map[string]*stagedRecord[T]

// get is call's record: the fold's, or the bucket's (read); copied, as the fold changes what it
// is given before it sets it, and appends to a record's turns.
func (m records[T]) get(call string, read func(string) (*T, error), copied func(T) T) (*T, error) {
	rec, ok := m[call]
	if !ok {
		v, err := read(call)
		if err != nil {
			return nil, err
		}
		rec = &stagedRecord[T]{v: v}
		m[call] = rec
	}
	if rec.v == nil {
		return nil, nil
	}
	v := copied(*rec.v)
	return &v, nil
}

// set records v (nil: none) for call, to be written.
func (m records[T]) set(call string, v *T, copied func(T) T) {
	rec := &stagedRecord[T]{dirty: true}
	if v != nil {
		c := copied(*v)
		rec.v = &c
	}
	m[call] = rec
}

func copyOpen(o journal.OpenCall) journal.OpenCall {
	o.Turns = slices.Clip(o.Turns)
	return o
}

func copyUnknown(u journal.UnknownCall) journal.UnknownCall {
	u.OpenCall = copyOpen(u.OpenCall)
	return u
}

func (s *staged) Open(call string) (*journal.OpenCall, error) {
	return s.open.get(call, s.disk.Open, copyOpen)
}

func (s *staged) SetOpen(call string, o *journal.OpenCall) error {
	s.open.set(call, o, copyOpen)
	return nil
}

func (s *staged) Unknown(call string) (*journal.UnknownCall, error) {
	return s.unknown.get(call, s.disk.Unknown, copyUnknown)
}

func (s *staged) SetUnknown(call string, u *journal.UnknownCall) error {
	s.unknown.set(call, u, copyUnknown)
	return nil
}

// AddVerdict is written at once: verdicts are keyed by their seq, never read by the fold.
func (s *staged) AddVerdict(v journal.Verdict) error { return s.disk.AddVerdict(v) }

func (s *staged) CallState(call string) (bool, journal.CallStatus, error) {
	if st, ok := s.states[call]; ok {
		return st.prepared, st.status, nil
	}
	prepared, status, err := s.disk.CallState(call)
	if err != nil {
		return false, "", err
	}
	s.states[call] = &stagedState{prepared: prepared, status: status}
	return prepared, status, nil
}

func (s *staged) SetCallState(call string, status journal.CallStatus) error {
	s.states[call] = &stagedState{prepared: true, status: status, dirty: true}
	return nil
}

// write puts what the fold changed into the buckets, each in key order (a file's pages do
// not depend on a map's order).
func (s *staged) write() error {
	for _, call := range slices.Sorted(maps.Keys(s.open)) {
		if rec := s.open[call]; rec.dirty {
			if err := s.disk.SetOpen(call, rec.v); err != nil {
				return err
			}
		}
	}
	for _, call := range slices.Sorted(maps.Keys(s.unknown)) {
		if rec := s.unknown[call]; rec.dirty {
			if err := s.disk.SetUnknown(call, rec.v); err != nil {
				return err
			}
		}
	}
	for _, call := range slices.Sorted(maps.Keys(s.states)) {
		if st := s.states[call]; st.dirty {
			if err := s.disk.SetCallState(call, st.status); err != nil {
				return err
			}
		}
	}
	return nil
}
