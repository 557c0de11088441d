// Package journalfiletest makes journals for tests and checks them afterwards.
package journalfiletest

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local/journalfile"
)

// RunID is the run id of journals made by Create.
const RunID = "run-test"

// Create makes a journal in a fresh temp dir and returns it with its path.
// On cleanup it closes the journal (if the test has not) and checks the file:
// bbolt's consistency check and a read-only open must both pass.
func Create(t testing.TB) (*journalfile.Journal, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := journalfile.Create(path, RunID)
	if err != nil {
		t.Fatalf("journalfiletest: create: %v", err)
	}
	t.Cleanup(func() {
		closeQuietly(t, j)
		Check(t, path)
	})
	return j, path
}

// Reopen opens the journal at path for writing, as a resumed run would; the
// previous handle must be closed. It is closed on cleanup.
func Reopen(t testing.TB, path string) *journalfile.Journal {
	t.Helper()
	j, err := journalfile.Open(path)
	if err != nil {
		t.Fatalf("journalfiletest: reopen: %v", err)
	}
	t.Cleanup(func() { closeQuietly(t, j) })
	return j
}

// Check fails the test if the closed journal at path is damaged.
func Check(t testing.TB, path string) {
	t.Helper()
	// bbolt's own check, apart from the journal's, so a bug in the journal's
	// checks cannot hide damage.
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Errorf("journalfiletest: check %s: %v", path, err)
		return
	}
	err = db.View(func(tx *bbolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Errorf("journalfiletest: check %s: %v", path, err)
		return
	}
	j, err := journalfile.OpenReadOnly(path)
	if err != nil {
		t.Errorf("journalfiletest: check %s: %v", path, err)
		return
	}
	if err := j.Close(); err != nil {
		t.Errorf("journalfiletest: check %s: %v", path, err)
	}
}

// closeQuietly closes j, tolerating a test that closed it already.
func closeQuietly(t testing.TB, j *journalfile.Journal) {
	t.Helper()
	if err := j.Close(); err != nil && !errors.Is(err, journalfile.ErrClosed) {
		t.Errorf("journalfiletest: close: %v", err)
	}
}

// SampleRows returns n rows of a few shapes, Seq and At left for Append.
func SampleRows(n int) []*journal.Row {
	rows := make([]*journal.Row, n)
	for i := range rows {
		call := "c" + string(rune('a'+i%26))
		switch i % 3 {
		case 0:
			rows[i] = &journal.Row{Type: journal.TypePrepared, Call: call, Index: i + 1, Role: "planner", Prompt: strings.Repeat("plan the work. ", 8)}
		case 1:
			rows[i] = &journal.Row{Type: journal.TypeTurnStarted, Call: call, K: 1, TurnID: "turn-" + call}
		default:
			rows[i] = &journal.Row{Type: journal.TypeCompleted, Call: call, Output: json.RawMessage(`{"ok":true,"n":1}`), Tokens: &journal.Tokens{Input: 10, Output: 5, Total: 15}}
		}
	}
	return rows
}
