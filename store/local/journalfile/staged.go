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
	open    map[string]*stagedRecord[journal.OpenCall]
	unknown map[string]*stagedRecord[journal.UnknownCall]
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
	return &staged{disk: disk, open: map[string]*stagedRecord[journal.OpenCall]{},
		unknown: map[string]*stagedRecord[journal.UnknownCall]{}, states: map[string]*stagedState{}}
}

// copyOpen is o as a value of its own: the fold changes what it is given before setting it,
// and a record's turns are appended to.
func copyOpen(o journal.OpenCall) journal.OpenCall {
	o.Turns = slices.Clip(o.Turns)
	return o
}

func (s *staged) Open(call string) (*journal.OpenCall, error) {
	rec, ok := s.open[call]
	if !ok {
		o, err := s.disk.Open(call)
		if err != nil {
			return nil, err
		}
		rec = &stagedRecord[journal.OpenCall]{v: o}
		s.open[call] = rec
	}
	if rec.v == nil {
		return nil, nil
	}
	o := copyOpen(*rec.v)
	return &o, nil
}

func (s *staged) SetOpen(call string, o *journal.OpenCall) error {
	rec := &stagedRecord[journal.OpenCall]{dirty: true}
	if o != nil {
		v := copyOpen(*o)
		rec.v = &v
	}
	s.open[call] = rec
	return nil
}

func (s *staged) Unknown(call string) (*journal.UnknownCall, error) {
	rec, ok := s.unknown[call]
	if !ok {
		u, err := s.disk.Unknown(call)
		if err != nil {
			return nil, err
		}
		rec = &stagedRecord[journal.UnknownCall]{v: u}
		s.unknown[call] = rec
	}
	if rec.v == nil {
		return nil, nil
	}
	u := *rec.v
	u.OpenCall = copyOpen(u.OpenCall)
	return &u, nil
}

func (s *staged) SetUnknown(call string, u *journal.UnknownCall) error {
	rec := &stagedRecord[journal.UnknownCall]{dirty: true}
	if u != nil {
		v := *u
		v.OpenCall = copyOpen(v.OpenCall)
		rec.v = &v
	}
	s.unknown[call] = rec
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
