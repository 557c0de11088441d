package enginetest

import (
	"context"
	"path/filepath"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// State is a state folder as crw's processes leave it, read the way a test reads it: each
// method opens the folder afresh, as a separate crw process would.
type State string

func (s State) service() (*engine.Service, error) {
	st, err := local.New(string(s))
	if err != nil {
		return nil, err
	}
	return Service(st), nil
}

// RunDir is a run's folder.
func (s State) RunDir(run string) string { return filepath.Join(string(s), "flow", run) }

// JournalPath is a run's journal file.
func (s State) JournalPath(run string) string {
	return filepath.Join(s.RunDir(run), local.JournalFile)
}

// Status is a run's status.
func (s State) Status(run string) (*store.Status, error) {
	svc, err := s.service()
	if err != nil {
		return nil, err
	}
	return svc.Status(context.Background(), run)
}

// Rows are a run's journal rows.
func (s State) Rows(run string) ([]journal.Row, error) {
	svc, err := s.service()
	if err != nil {
		return nil, err
	}
	return svc.Rows(context.Background(), run)
}

// Runs are the folder's runs.
func (s State) Runs() ([]string, error) {
	svc, err := s.service()
	if err != nil {
		return nil, err
	}
	return svc.Store.List(context.Background())
}

// Published is what a run's holder last published; an error when nothing was.
func (s State) Published(run string) (*store.Status, error) {
	svc, err := s.service()
	if err != nil {
		return nil, err
	}
	st, _, err := svc.Store.Published(context.Background(), run)
	if err == nil && st == nil {
		err = store.ErrNotFound
	}
	return st, err
}
