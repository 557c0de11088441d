package inputs_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
)

func TestParseRoles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    inputs.RoleTable
		wantErr string // the whole detail
	}{
		{name: "a table", in: `{"roles": {"architect": {"model": "gpt-5", "effort": "high"}, "executor": {}}}`,
			want: inputs.RoleTable{"architect": {Model: "gpt-5", Effort: "high"}, "executor": {}}},
		{name: "trailing space", in: "{\"roles\": {}}\n\t ", want: inputs.RoleTable{}},
		{name: "NUL in a model", in: `{"roles": {"architect": {"model": "gpt\u0000-5"}}}`,
			wantErr: `roles.json: roles.architect.model: holds the control character U+0000 at byte 3`},
		{name: "newline in a model", in: `{"roles": {"reviewer": {"model": "gpt-5\nrm -rf"}}}`,
			wantErr: `roles.json: roles.reviewer.model: holds the control character U+000A at byte 5`},
		{name: "DEL in a model", in: `{"roles": {"reviewer": {"model": "m\u007f"}}}`,
			wantErr: `roles.json: roles.reviewer.model: holds the control character U+007F at byte 1`},
		{name: "C1 control in a model", in: `{"roles": {"reviewer": {"model": "é\u0085"}}}`,
			wantErr: `roles.json: roles.reviewer.model: holds the control character U+0085 at byte 2`},
		{name: "text after the table", in: `{"roles": {}} {"roles": {}}`,
			wantErr: `roles.json: not a role table ({"roles": {ROLE: {"model": …, "effort": …}}}): text after the JSON value`},
		{name: "a bracket after the table", in: `{"roles": {}}]`,
			wantErr: `roles.json: not a role table ({"roles": {ROLE: {"model": …, "effort": …}}}): text after the JSON value`},
		{name: "no roles", in: `{}`, wantErr: `roles.json: roles: missing`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := inputs.ParseRoles("roles.json", []byte(tt.in))
			if tt.wantErr != "" {
				e, ok := errs.As(err)
				require.True(t, ok, "%v", err)
				assert.Equal(t, errs.InvalidRequest, e.Code)
				assert.Equal(t, tt.wantErr, e.Detail)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// FuzzParseRoles: any content ends in a table or in invalid_request naming the file; a table
// accepted is written back and read again unchanged, and no model holds a control character.
func FuzzParseRoles(f *testing.F) {
	for _, s := range []string{
		`{"roles": {"architect": {"model": "gpt-5", "effort": "high"}, "executor": {}}}`,
		`{"roles": {"reviewer": {"model": "gpt\n5"}}}`,
		`{"roles": {"wizard": {}}}`,
		`{"roles": {"planner": {"effort": "extreme"}}}`,
		`{"roles": {"planner": {"color": "red"}}}`,
		`{"roles": null}`,
		`{"roles": {}} x`,
		`[]`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		table, err := inputs.ParseRoles("roles.json", data)
		if err != nil {
			e, ok := errs.As(err)
			if !ok || e.Code != errs.InvalidRequest || !strings.HasPrefix(e.Detail, "roles.json: ") {
				t.Fatalf("not invalid_request naming the file: %#v", err)
			}
			return
		}
		for role, p := range table {
			if strings.ContainsFunc(p.Model, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("role %s: model %q holds a control character", role, p.Model)
			}
		}
		out, err := json.Marshal(map[string]map[string]journal.Pair{"roles": table})
		if err != nil {
			t.Fatal(err)
		}
		again, err := inputs.ParseRoles("again.json", out)
		if err != nil {
			t.Fatalf("%s does not read back: %v", out, err)
		}
		if table.Digest() != again.Digest() || len(table) != len(again) {
			t.Fatalf("%s reads back as %v, was %v", out, again, table)
		}
	})
}
