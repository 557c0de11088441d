package schema

import "strings"

// refCycle is a loop of $ref that consumes no part of a document: validating any value
// against it would come back to the same value and the same schema, forever.
type refCycle struct {
	at   string   // the pointer of the $ref that closes the loop
	defs []string // the definitions on the loop, the first repeated at the end; "" stands for those left out
}

func (c refCycle) String() string {
	parts := make([]string, len(c.defs))
	for i, d := range c.defs {
		if d == "" {
			parts[i] = "…"
		} else {
			parts[i] = "#/$defs/" + pointerEscaper.Replace(d)
		}
	}
	return strings.Join(parts, " → ")
}

// The states of a definition in the walk of refCycles.
const (
	unvisited = iota
	onStack
	finished
)

// maxLoopShown bounds how many definitions a cycle's message names.
const maxLoopShown = 8

// refCycles finds the $ref cycles among the root's definitions that pass through no
// "properties" or "items": the steps that move into a part of the document. A $ref, and an
// anyOf branch (which validates the same value), do not. Each loop is reported once, at the
// $ref that closes it in a walk of the definitions in document order. The walk keeps its
// own stack: a chain of many definitions must not take the goroutine's.
func refCycles(root *value) []refCycle {
	defs := root.get("$defs")
	if defs == nil || defs.kind != kindObject {
		return nil
	}
	byName := lastMembers(defs)
	state := map[string]int{}
	at := map[string]int{} // a definition's place on the stack
	var stack []cycleFrame
	var out []refCycle
	push := func(name string) {
		state[name], at[name] = onStack, len(stack)
		stack = append(stack, cycleFrame{name: name, edges: sameValueRefs(byName, byName[name], ptr("/$defs", name), nil)})
	}
	for _, m := range defs.obj {
		if state[m.key] != unvisited || byName[m.key] != m.val {
			continue
		}
		push(m.key)
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == len(top.edges) {
				state[top.name] = finished
				stack = stack[:len(stack)-1]
				continue
			}
			e := top.edges[top.next]
			top.next++
			switch state[e.target] {
			case unvisited:
				push(e.target)
			case onStack:
				out = append(out, refCycle{at: e.at, defs: loopNames(stack[at[e.target]:], e.target)})
			}
		}
	}
	return out
}

type cycleFrame struct {
	name  string
	edges []refEdge
	next  int
}

// loopNames names the definitions of a loop, from the stack's frames from its start on,
// the first repeated at the end; a long loop shows its ends around a "" for the rest.
func loopNames(frames []cycleFrame, target string) []string {
	var names []string
	if len(frames) > maxLoopShown {
		for _, f := range frames[:maxLoopShown/2] {
			names = append(names, f.name)
		}
		names = append(names, "")
		frames = frames[len(frames)-maxLoopShown/2:]
	}
	for _, f := range frames {
		names = append(names, f.name)
	}
	return append(names, target)
}

// refEdge is a $ref that validates the same value as the schema holding it.
type refEdge struct {
	target string // the definition it names
	at     string // its pointer
}

// sameValueRefs collects the $refs of v, and of its anyOf branches, that name a definition.
func sameValueRefs(defs map[string]*value, v *value, p string, out []refEdge) []refEdge {
	if v == nil || v.kind != kindObject {
		return out
	}
	if target, ok := defName(v.get("$ref")); ok && defs[target] != nil {
		out = append(out, refEdge{target: target, at: ptr(p, "$ref")})
	}
	if alts := v.get("anyOf"); alts != nil && alts.kind == kindArray {
		for i, b := range alts.arr {
			out = sameValueRefs(defs, b, ptrIndex(p, "anyOf", i), out)
		}
	}
	return out
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
