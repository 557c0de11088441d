package inputs

import (
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/runtime/modules/agent"
)

// Prepared is what a call asked (its prepared row's inputs, without its id and index) and what
// was worked out of them.
type Prepared struct {
	Inputs     journal.Prepared
	Configured journal.Pair // the pair the call runs with; with PairErr, the role table's
	PairErr    error        // the requested pair contradicts the role table
	Schema     *Schema      // nil for a call without a schema
	row        *journal.Row
}

// Row is the call's prepared row, made on its first use: a call the journal answers (a
// replay) is matched by its Inputs and never needs one.
func (p *Prepared) Row() *journal.Row {
	if p.row == nil {
		p.row = p.Inputs.Row()
	}
	return p.row
}

// Prepare works out a call's inputs: the pair the roles configure, its schema compiled.
func Prepare(req agent.Request, roles RoleTable, schemas *Schemas) Prepared {
	var p Prepared
	requested := journal.Pair{Model: req.Model, Effort: req.Effort}
	schemaDigest := ""
	if req.Schema != nil {
		p.Schema = schemas.Get(req.Schema)
		schemaDigest = p.Schema.Digest
	}
	row := journal.Prepared{Role: req.Role, Node: req.Node, Prompt: req.Prompt, SchemaDigest: schemaDigest, Handle: req.Resume, Site: req.Site}
	if requested != (journal.Pair{}) {
		row.RequestedPair = &requested
	}
	// A refused pair records the role table's (what the request contradicted) as configured.
	p.Configured, p.PairErr = roles.Decide(req.Role, requested)
	if p.Configured != (journal.Pair{}) {
		c := p.Configured
		row.ConfiguredPair = &c
	}
	p.Inputs = row
	return p
}
