package main

import (
	"context"
	"path/filepath"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// The tests' view of a state folder, as crw's processes leave it.

func service(state string) (*engine.Service, error) {
	st, err := local.New(state)
	if err != nil {
		return nil, err
	}
	return enginetest.Service(st), nil
}

func runDir(state, run string) string { return filepath.Join(state, "flow", run) }

func journalPath(state, run string) string {
	return filepath.Join(runDir(state, run), local.JournalFile)
}

// published is what a run's holder last published; an error when nothing was.
func published(state, run string) (*store.Status, error) {
	svc, err := service(state)
	if err != nil {
		return nil, err
	}
	st, _, err := svc.Store.Published(context.Background(), run)
	if err == nil && st == nil {
		err = store.ErrNotFound
	}
	return st, err
}

func runStatus(state, run string) (*store.Status, error) {
	svc, err := service(state)
	if err != nil {
		return nil, err
	}
	return svc.Status(context.Background(), run)
}

func readRows(state, run string) ([]journal.Row, error) {
	svc, err := service(state)
	if err != nil {
		return nil, err
	}
	return svc.Rows(context.Background(), run)
}

func listRuns(state string) ([]string, error) {
	svc, err := service(state)
	if err != nil {
		return nil, err
	}
	return svc.Store.List(context.Background())
}
