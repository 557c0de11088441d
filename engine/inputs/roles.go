// Package inputs works out what a call asks for, the same way for a live run and a shadow: its
// prepared row (the inputs a replay compares), the pair a role table configures, its schema
// checked and compiled once per distinct text.
package inputs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/crw-dev/crw/userfile"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/runtime/modules/agent"
)

// RoleTable gives each role its (model, effort) pair; a part left empty is undecided and the
// call's request, or else the host, decides it.
type RoleTable map[string]journal.Pair

// LoadRoles reads a role table file: {"roles": {"architect": {"model": "…", "effort": "…"}, …}}.
func LoadRoles(path string) (RoleTable, error) {
	data, err := userfile.Read(path, userfile.MaxData)
	if err != nil {
		return nil, errs.New(errs.InvalidRequest, "%s: cannot read the role table: %v", path, err)
	}
	return ParseRoles(path, data)
}

// ParseRoles checks a role table file's content; path names it in errors, which are all
// invalid_request and say which role and field is wrong.
func ParseRoles(path string, data []byte) (RoleTable, error) {
	var doc struct {
		Roles map[string]json.RawMessage `json:"roles"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := decodeWhole(dec, &doc); err != nil {
		return nil, errs.New(errs.InvalidRequest, "%s: not a role table ({\"roles\": {ROLE: {\"model\": …, \"effort\": …}}}): %v", path, err)
	}
	if doc.Roles == nil {
		return nil, errs.New(errs.InvalidRequest, "%s: roles: missing", path)
	}
	t := RoleTable{}
	for role, raw := range doc.Roles {
		if !isRole(role) {
			return nil, errs.New(errs.InvalidRequest, "%s: roles.%s: unknown role (roles: %v)", path, role, agent.Roles)
		}
		var p journal.Pair
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&p); err != nil {
			return nil, errs.New(errs.InvalidRequest, "%s: roles.%s: %v (a pair takes model and effort)", path, role, err)
		}
		if err := checkModel(p.Model); err != nil {
			return nil, errs.New(errs.InvalidRequest, "%s: roles.%s.model: %v", path, role, err)
		}
		if p.Effort != "" && !contains(agent.Efforts, p.Effort) {
			return nil, errs.New(errs.InvalidRequest, "%s: roles.%s.effort: %q is not one of %v", path, role, p.Effort, agent.Efforts)
		}
		t[role] = p
	}
	return t, nil
}

// Digest identifies the table's decisions.
func (t RoleTable) Digest() string {
	roles := make([]string, 0, len(t))
	for r := range t {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	h := sha256.New()
	for _, r := range roles {
		fmt.Fprintf(h, "%s\x00%s\x00%s\n", r, t[r].Model, t[r].Effort)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Decide returns the configured pair of a call: the table's decided parts, else the parts the
// call requested. A requested part that contradicts a decided part is refused.
func (t RoleTable) Decide(role string, requested journal.Pair) (journal.Pair, error) {
	decided := t[role]
	out := requested
	if decided.Model != "" {
		if requested.Model != "" && requested.Model != decided.Model {
			return decided, fmt.Errorf("role %s runs model %q; the call asked for %q", role, decided.Model, requested.Model)
		}
		out.Model = decided.Model
	}
	if decided.Effort != "" {
		if requested.Effort != "" && requested.Effort != decided.Effort {
			return decided, fmt.Errorf("role %s runs effort %q; the call asked for %q", role, decided.Effort, requested.Effort)
		}
		out.Effort = decided.Effort
	}
	return out, nil
}

func isRole(r string) bool { return contains(agent.Roles, r) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
