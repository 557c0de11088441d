package store

import (
	"encoding/json"
	"time"

	"github.com/crw-dev/crw/errs"
)

// LogError writes the full account of an error that has a diagnostic to l, on a line that
// carries the diagnostic's correlation id, and names l in the diagnostic: the user sees the
// bounded error, the log keeps what caused it.
func LogError(l Log, e *errs.Error) {
	if e == nil || e.Diagnostic == nil {
		return
	}
	entry := struct {
		At            time.Time `json:"at"`
		CorrelationID string    `json:"correlationId"`
		Code          errs.Code `json:"code"`
		Phase         string    `json:"phase,omitempty"`
		Reason        string    `json:"reason,omitempty"`
		Detail        string    `json:"detail,omitempty"`
		Cause         string    `json:"cause,omitempty"`
	}{time.Now().UTC(), e.Diagnostic.CorrelationID, e.Code, e.Diagnostic.Phase, e.Diagnostic.Reason, e.Detail, ""}
	if c := e.Cause(); c != nil {
		entry.Cause = c.Error()
	}
	line, err := json.Marshal(entry)
	if err != nil {
		return
	}
	if l.Append(line) == nil {
		e.Diagnostic.Log = l.Name()
	}
}
