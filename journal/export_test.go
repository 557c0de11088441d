package journal_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local/journalfile/journalfiletest"
)

func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	j, _ := journalfiletest.Create(t)
	raw := "a <b> & \"c\""
	rows := append([]*journal.Row{{
		Type: journal.TypeStarted, Run: journalfiletest.RunID, Workflow: "wf.js",
		RolePairs: map[string]journal.Pair{"planner": {Model: "m", Effort: "high"}},
		Input:     json.RawMessage(`{"task":"x"}`),
	}}, journalfiletest.SampleRows(6)...)
	rows = append(rows,
		&journal.Row{Type: journal.TypeCompleted, Call: "ca", RawText: &raw, TurnIDs: []string{"t1", "t2"}},
		// A resume with another answers file (crw flow resume RUN --answers F) writes one.
		journal.ResumeChanged{By: "uid 1", BackendOptions: map[string]string{"answers": "after.json"}}.Row(),
		&journal.Row{Type: journal.TypeEnded, Status: "failed", Error: &journal.RunError{Message: "boom", Code: "E1"}},
	)
	_, err := j.Write(rows...)
	require.NoError(t, err)
	stored, err := j.Rows()
	require.NoError(t, err)

	var buf bytes.Buffer
	require.NoError(t, journal.Export(&buf, j.RunID(), stored))
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, len(stored)+1)
	assert.Equal(t, `{"format":"crw-trace/1","run":"run-test"}`, lines[0])
	assert.Contains(t, buf.String(), `a <b> & \"c\"`, "no HTML escaping in traces")

	got, err := journal.Import(&buf)
	require.NoError(t, err)
	assert.Equal(t, stored, got)

	// An empty run is a header alone.
	buf.Reset()
	require.NoError(t, journal.Export(&buf, "r", nil))
	got, err = journal.Import(&buf)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestExportRejectsGaps(t *testing.T) {
	t.Parallel()
	err := journal.Export(&bytes.Buffer{}, "r", []journal.Row{{Seq: 1, Type: "warning"}, {Seq: 3, Type: "warning"}})
	require.ErrorContains(t, err, "row 2 has seq 3, want 2")
}

// The traces TestImport and TestTraceFileReadsWhatImportReads read, and what they must give.
const (
	header = `{"format":"crw-trace/1","run":"r1"}`
	row1   = `{"seq":1,"type":"started","at":"2026-01-01T00:00:00Z","run":"r1"}`
	row2   = `{"seq":2,"type":"warning","at":"2026-01-01T00:00:01Z","detail":"w"}`
	row3   = `{"seq":3,"type":"ended","at":"2026-01-01T00:00:02Z","status":"ok"}`
)

var importCases = []struct {
	name    string
	in      string
	rows    int    // rows expected on success
	wantErr string // substring of the error, "" for success
}{
	{name: "good", in: header + "\n" + row1 + "\n" + row2 + "\n" + row3 + "\n", rows: 3},
	{name: "no final newline", in: header + "\n" + row1 + "\n" + row2, rows: 2},
	{name: "CRLF lines", in: header + "\r\n" + row1 + "\r\n", rows: 1},
	{name: "empty input", in: "", wantErr: "line 1: missing header"},
	{name: "header not JSON", in: "crw-trace/1\n" + row1, wantErr: "line 1: header: invalid JSON"},
	{name: "header other format", in: `{"format":"crw-trace/2","run":"r1"}` + "\n" + row1, wantErr: `line 1: format "crw-trace/2"`},
	{name: "header without format", in: `{"run":"r1"}` + "\n" + row1, wantErr: `line 1: format ""`},
	{name: "header without run", in: `{"format":"crw-trace/1"}` + "\n", wantErr: "line 1: header has no run id"},
	{name: "a row first", in: row1 + "\n", wantErr: `line 1: header: json: unknown field "seq"`},
	{name: "row not JSON", in: header + "\n" + row1 + "\n" + `{"seq":2,` + "\n" + row3, wantErr: "line 3: invalid JSON"},
	{name: "blank line", in: header + "\n" + row1 + "\n\n" + row2, wantErr: "line 3: empty line"},
	{name: "two objects on a line", in: header + "\n" + row1 + " " + row2 + "\n", wantErr: "line 2: invalid JSON: more after the object"},
	{name: "unknown field", in: header + "\n" + `{"seq":1,"type":"warning","at":"2026-01-01T00:00:00Z","detial":"x"}`, wantErr: `line 2: json: unknown field "detial"`},
	{name: "wrong field type", in: header + "\n" + `{"seq":"1","type":"warning"}`, wantErr: "line 2: json: cannot unmarshal"},
	{name: "first seq not 1", in: header + "\n" + row2, wantErr: "line 2: seq 2, want 1"},
	{name: "gap", in: header + "\n" + row1 + "\n" + row3 + "\n", wantErr: "line 3: seq 3, want 2"},
	{name: "repeat", in: header + "\n" + row1 + "\n" + row1 + "\n", wantErr: "line 3: seq 1, want 2"},
	{name: "unknown row type", in: header + "\n" + row1 + "\n" + `{"seq":2,"type":"finished","at":"2026-01-01T00:00:01Z"}` + "\n", wantErr: `line 3: unknown row type "finished"`},
	{name: "no row type", in: header + "\n" + `{"seq":1,"at":"2026-01-01T00:00:01Z"}` + "\n", wantErr: `line 2: unknown row type ""`},
	{name: "started names another run", in: `{"format":"crw-trace/1","run":"r2"}` + "\n" + row1, wantErr: `line 2: run "r1", but the header says "r2"`},
}

func TestImport(t *testing.T) {
	t.Parallel()
	for _, tt := range importCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rows, err := journal.Import(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.Nil(t, rows)
				return
			}
			require.NoError(t, err)
			require.Len(t, rows, tt.rows)
			for i, r := range rows {
				assert.Equal(t, uint64(i+1), r.Seq)
			}
		})
	}
}
