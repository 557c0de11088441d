package journalfile

import (
	"errors"
	"strings"
)

// Conditions callers branch on. They come wrapped with what was being done;
// test with errors.Is.
var (
	// ErrLocked: another handle holds the file (bbolt's lock timed out).
	ErrLocked = errors.New("locked by another handle")
	// ErrCorrupt: the file is damaged or is not a bbolt file. It was left as it was.
	ErrCorrupt = errors.New("corrupt journal")
	// ErrSchema: a bbolt file whose meta/schema is not Schema.
	ErrSchema = errors.New("unknown journal schema")
	// ErrExists: Create found a file already at the path.
	ErrExists = errors.New("journal already exists")
	// ErrClosed: the journal was closed.
	ErrClosed = errors.New("journal closed")
	// ErrReadOnly: a write on a journal opened with OpenReadOnly.
	ErrReadOnly = errors.New("journal is read-only")
	// ErrUnrecovered: a reader's journal whose file may be torn: the machine restarted since
	// its last writer opened it, and that writer did not close it. The next open to write
	// makes it again from its log.
	ErrUnrecovered = errors.New("journal not yet recovered from its log")
)

// Damage is what a damaged journal's error says of the damage itself ("truncated", "empty
// file", a checksum that fails), without the path and wrapping around it; "" for an error that
// is not ErrCorrupt or ErrSchema.
func Damage(err error) string {
	if err == nil || !(errors.Is(err, ErrCorrupt) || errors.Is(err, ErrSchema)) {
		return ""
	}
	s := err.Error()
	for _, sentinel := range []error{ErrCorrupt, ErrSchema} {
		if i := strings.LastIndex(s, sentinel.Error()+": "); i >= 0 {
			return s[i+len(sentinel.Error())+2:]
		}
	}
	return s
}
