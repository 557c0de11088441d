package loader

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/dop251/goja"

	"github.com/crw-dev/crw/runtime/jsutil"
)

func isSchemaModule(name string) bool {
	return name == "crw:lib/schemas" || strings.HasPrefix(name, "crw:lib/schemas/")
}

// checkSchemas runs Config.CheckSchema over every export of a schema
// module, in the order of the exports.
//
// Skipped: functions (helpers that build schemas), __esModule, and a
// default export that is only a namespace of the module's own exports
// (module.exports itself, or `export default { plan, review }` where plan
// and review are also named exports): each of those schemas is checked
// under its own name already. Any other default export is a schema like
// the rest. Once every export passed, each checked one is deeply frozen.
func (s *session) checkSchemas(t *target, exports goja.Value) error {
	if s.l.check == nil {
		return nil
	}
	var found []Problem
	report := func(export, pointer, rule, msg string) {
		found = append(found, Problem{Export: export, Pointer: pointer, Rule: rule, Message: msg})
	}
	var checked []goja.Value
	obj, ok := exports.(*goja.Object)
	if !ok {
		report("module.exports", "", "not_a_schema", "a schema module must export an object, got "+describe(exports))
	} else {
		keys := obj.Keys()
		for _, k := range keys {
			if k == "__esModule" {
				continue
			}
			v := obj.Get(k)
			if _, fn := goja.AssertFunction(v); fn {
				continue
			}
			if k == "default" && isNamespace(obj, keys, v) {
				continue
			}
			doc, why := s.toJSON(v)
			if why != "" {
				report(k, "", "not_a_schema", why)
				continue
			}
			for _, p := range s.l.check(doc) {
				report(k, p.Pointer, p.Rule, p.Message)
			}
			checked = append(checked, v)
		}
	}
	if len(found) == 0 {
		// A checked schema stays what was checked: no script can loosen it afterwards.
		freeze := s.in.DeepFreeze
		for _, v := range checked {
			freeze(v)
		}
		return nil
	}
	// Each problem points at its export's declaration, and they are told in the order the
	// module declares them (the exports object lists them by name): the error points at the
	// first.
	if src, err := s.l.read(t); err == nil {
		at := map[string][2]int{}
		for i, p := range found {
			pos, ok := at[p.Export]
			if !ok && len(at) < maxPlaced {
				line, col := exportAt(src, p.Export)
				pos = [2]int{line, col}
				at[p.Export] = pos
			}
			found[i].Line, found[i].Column = pos[0], pos[1]
		}
		slices.SortStableFunc(found, func(a, b Problem) int {
			if (a.Line == 0) != (b.Line == 0) {
				return cmp.Compare(b.Line, a.Line) // those it cannot place last
			}
			return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
		})
	}
	problems := make([]string, len(found))
	for i, p := range found {
		pointer := p.Pointer
		if pointer == "" {
			pointer = "(root)"
		}
		problems[i] = fmt.Sprintf("%s: export %q: %s: %s: %s", t.name, p.Export, pointer, p.Rule, p.Message)
	}
	return &LoadError{Code: CodeSchemaNotStrict, Module: t.name, File: t.file, Message: strings.Join(problems, "; "), Problems: found,
		Line: found[0].Line, Column: found[0].Column}
}

// maxPlaced bounds the exports whose declarations a schema module's error looks for: each
// look scans the source, and a module of thousands of loose exports would be scanned as many
// times. Those past it are told last, without a place.
const maxPlaced = 100

// exportAt is the 1-based line and column where the source declares the export name (export
// const name, export { name }, export default, exports.name =), 0, 0 when it cannot tell.
func exportAt(src []byte, name string) (line, col int) {
	var patterns []string
	q := regexp.QuoteMeta(name)
	if name == "default" {
		patterns = []string{`\bexport\s+default\b`, `\bmodule\.exports\s*=`}
	} else {
		patterns = []string{
			`\bexport\s+(?:const|let|var|function\*?|class)\s+` + q + `\b`,
			`\bexport\s*\{[^}]*\b` + q + `\b`,
			`\b(?:module\.)?exports\.` + q + `\s*=`,
			`\b(?:const|let|var)\s+` + q + `\s*=`, // module.exports = { name }
			`\bmodule\.exports\s*=`,
		}
	}
	for _, p := range patterns {
		if loc := regexp.MustCompile(p).FindIndex(src); loc != nil {
			return lineCol(src, loc[0])
		}
	}
	return 0, 0
}

func isNamespace(exports *goja.Object, keys []string, def goja.Value) bool {
	d, ok := def.(*goja.Object)
	if !ok {
		return false
	}
	if d.SameAs(exports) {
		return true
	}
	dk := d.Keys()
	if len(dk) == 0 {
		return false
	}
	for _, k := range dk {
		if k == "default" || !slices.Contains(keys, k) || !d.Get(k).StrictEquals(exports.Get(k)) {
			return false
		}
	}
	return true
}

// toJSON converts an export with JSON.stringify semantics; why says what
// is wrong when the result is not a JSON object.
func (s *session) toJSON(v goja.Value) (doc []byte, why string) {
	out, err := s.stringify(goja.Undefined(), v)
	if err != nil {
		msg := err.Error()
		if ex, ok := err.(*goja.Exception); ok {
			msg, _ = FormatException(ex, s.in)
		}
		return nil, "cannot be converted to JSON: " + msg
	}
	if out == nil || goja.IsUndefined(out) {
		return nil, "a schema must be a JSON object, got " + describe(v)
	}
	str := out.String()
	if !strings.HasPrefix(str, "{") {
		return nil, "a schema must be a JSON object, got " + describe(v)
	}
	return []byte(str), ""
}

// describe names the type of a JS value for messages, with its article.
func describe(v goja.Value) string {
	switch name := jsutil.TypeName(v); name {
	case "undefined", "null":
		return name
	case "array", "object":
		return "an " + name
	default:
		return "a " + name
	}
}
