package schema

import "strings"

// refCycle is a loop of $ref that consumes no part of a document: validating any value
// against it would come back to the same value and the same schema, forever.
type refCycle struct {
	at   string   // the pointer of the $ref that closes the loop
	defs []string // the definitions on the loop, the first repeated at the end
}

func (c refCycle) String() string {
	parts := make([]string, len(c.defs))
	for i, d := range c.defs {
		parts[i] = "#/$defs/" + pointerEscaper.Replace(d)
	}
	return strings.Join(parts, " → ")
}

// refCycles finds the $ref cycles among the root's definitions that pass through no
// "properties" or "items": the steps that move into a part of the document. A $ref, and an
// anyOf branch (which validates the same value), do not. Each loop is reported once, at the
// $ref that closes it in a walk of the definitions in document order.
func refCycles(root *value) []refCycle {
	defs := root.get("$defs")
	if defs == nil || defs.kind != kindObject {
		return nil
	}
	f := &cycleFinder{defs: lastMembers(defs), state: map[string]int{}}
	for _, m := range defs.obj {
		if f.state[m.key] == unvisited && f.defs[m.key] == m.val {
			f.visit(m.key)
		}
	}
	return f.out
}

const (
	unvisited = iota
	onStack
	finished
)

type cycleFinder struct {
	defs  map[string]*value
	state map[string]int
	stack []string
	out   []refCycle
}

func (f *cycleFinder) visit(name string) {
	f.state[name] = onStack
	f.stack = append(f.stack, name)
	f.walk(f.defs[name], ptr("/$defs", name))
	f.stack = f.stack[:len(f.stack)-1]
	f.state[name] = finished
}

// walk follows the steps of v that stay on the same value: its $ref and its anyOf branches.
func (f *cycleFinder) walk(v *value, p string) {
	if v == nil || v.kind != kindObject {
		return
	}
	if target, ok := defName(v.get("$ref")); ok && f.defs[target] != nil {
		switch f.state[target] {
		case unvisited:
			f.visit(target)
		case onStack:
			i := len(f.stack) - 1
			for f.stack[i] != target {
				i--
			}
			loop := append(append([]string(nil), f.stack[i:]...), target)
			f.out = append(f.out, refCycle{at: ptr(p, "$ref"), defs: loop})
		}
	}
	if alts := v.get("anyOf"); alts != nil && alts.kind == kindArray {
		for i, b := range alts.arr {
			f.walk(b, ptrIndex(p, "anyOf", i))
		}
	}
}

// lastMembers maps an object's member names to their values; of a repeated name the last
// counts, as value.get reads it.
func lastMembers(v *value) map[string]*value {
	m := make(map[string]*value, len(v.obj))
	for _, mem := range v.obj {
		m[mem.key] = mem.val
	}
	return m
}
