package journal_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/crw-dev/crw/journal"
)

// FuzzImport: any trace ends in rows or in an error naming its line; a trace accepted is
// written back by Export, and what Export writes reads back to the same trace.
func FuzzImport(f *testing.F) {
	const header = `{"format":"crw-trace/1","run":"r1"}` + "\n"
	for _, s := range []string{
		header + `{"seq":1,"type":"started","at":"2026-01-01T00:00:00Z","run":"r1","input":{"task":"x"},"pool":4}` + "\n" +
			`{"seq":2,"type":"prepared","at":"2026-01-01T00:00:01Z","call":"c1","index":1,"role":"planner","node":"n","prompt":"plan"}` + "\n" +
			`{"seq":3,"type":"completed","at":"2026-01-01T00:00:02Z","call":"c1","output":{"ok":true},"tokens":{"input":3,"total":3}}` + "\n" +
			`{"seq":4,"type":"ended","at":"2026-01-01T00:00:03Z","status":"completed","result":[1,"two"]}` + "\n",
		header + `{"seq":1,"type":"warning","at":"2026-01-01T00:00:01+02:00","detail":"w"}`,
		header + `{"seq":1,"type":"finished"}`,
		header + `{"seq":2,"type":"warning"}`,
		header + "\r\n\n",
		`{"format":"crw-trace/1"}`,
		`{"run":"r"}`,
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := journal.Import(bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "journal: import: line ") {
				t.Fatalf("the error names no line: %v", err)
			}
			return
		}
		var h struct{ Run string }
		first, _, _ := bytes.Cut(data, []byte("\n"))
		if err := json.Unmarshal(first, &h); err != nil {
			t.Fatalf("an accepted header does not read: %v", err)
		}
		var once bytes.Buffer
		if err := journal.Export(&once, h.Run, rows); err != nil {
			t.Fatalf("accepted rows do not export: %v", err)
		}
		again, err := journal.Import(bytes.NewReader(once.Bytes()))
		if err != nil {
			t.Fatalf("an exported trace does not import: %v\n%s", err, once.Bytes())
		}
		var twice bytes.Buffer
		if err := journal.Export(&twice, h.Run, again); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once.Bytes(), twice.Bytes()) {
			t.Fatalf("export, import, export changed the trace:\n%s\n%s", once.Bytes(), twice.Bytes())
		}
	})
}
