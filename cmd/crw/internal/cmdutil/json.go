package cmdutil

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/crw-dev/crw/journal"
)

// WriteJSON prints v as one JSON object on a line, escaped as every command escapes: <, > and &
// as they are, also inside what the journal kept escaped.
func WriteJSON(w io.Writer, v any) {
	b, err := MarshalJSON(v)
	if err != nil {
		return
	}
	_, _ = w.Write(append(b, '\n'))
}

// MarshalJSON is v's JSON as WriteJSON writes it, without the line's end.
func MarshalJSON(v any) ([]byte, error) {
	b, err := journal.MarshalPlain(v)
	if err != nil {
		return nil, err
	}
	return journal.UnescapeHTML(b), nil
}

// Compact is a JSON value on one line, unescaped as WriteJSON writes it.
func Compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return string(journal.UnescapeHTML(b.Bytes()))
}
