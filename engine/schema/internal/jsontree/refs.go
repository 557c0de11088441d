package jsontree

import (
	"math"
	"strconv"
	"strings"
)

// Cycle is a loop of $ref that consumes no part of a document: validating any value
// against it would come back to the same value and the same schema, forever.
type Cycle struct {
	At   string   // the pointer of the $ref that closes the loop
	defs []string // the definitions on the loop, the first repeated at the end; "" stands for those left out
}

func (c Cycle) String() string {
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

// The states of a definition in the walk of Cycles.
const (
	unvisited = iota
	onStack
	finished
)

// maxLoopShown bounds how many definitions a cycle's message names.
const maxLoopShown = 8

// Cycles finds the $ref cycles among the root's definitions that pass through no
// "properties" or "items": the steps that move into a part of the document. A $ref, and an
// anyOf branch (which validates the same value), do not. Each loop is reported once, at the
// $ref that closes it in a walk of the definitions in document order. The walk keeps its
// own stack: a chain of many definitions must not take the goroutine's.
func Cycles(root *Value) []Cycle {
	defs := root.Get("$defs")
	if defs == nil || defs.Kind != KindObject {
		return nil
	}
	byName := LastMembers(defs)
	state := map[string]int{}
	at := map[string]int{} // a definition's place on the stack
	var stack []cycleFrame
	var out []Cycle
	push := func(name string) {
		state[name], at[name] = onStack, len(stack)
		stack = append(stack, cycleFrame{name: name, edges: sameValueRefs(byName, byName[name], Ptr("/$defs", name), nil)})
	}
	for _, m := range defs.Obj {
		if state[m.Key] != unvisited || byName[m.Key] != m.Val {
			continue
		}
		push(m.Key)
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
				out = append(out, Cycle{At: e.at, defs: loopNames(stack[at[e.target]:], e.target)})
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
func sameValueRefs(defs map[string]*Value, v *Value, p string, out []refEdge) []refEdge {
	if v == nil || v.Kind != KindObject {
		return out
	}
	if target, ok := DefName(v.Get("$ref")); ok && defs[target] != nil {
		out = append(out, refEdge{target: target, at: Ptr(p, "$ref")})
	}
	if alts := v.Get("anyOf"); alts != nil && alts.Kind == KindArray {
		for i, b := range alts.Arr {
			out = sameValueRefs(defs, b, PtrIndex(p, "anyOf", i), out)
		}
	}
	return out
}

// LastMembers maps an object's Member names to their values; of a repeated name the last
// counts, as Value.Get reads it.
func LastMembers(v *Value) map[string]*Value {
	m := make(map[string]*Value, len(v.Obj))
	for _, mem := range v.Obj {
		m[mem.Key] = mem.Val
	}
	return m
}

// DefName is the definition a $ref "#/$defs/<name>" names, its token unescaped.
func DefName(ref *Value) (string, bool) {
	if ref == nil || ref.Kind != KindString {
		return "", false
	}
	tok, ok := strings.CutPrefix(ref.Str, "#/$defs/")
	if !ok || tok == "" || strings.Contains(tok, "/") {
		return "", false
	}
	return pointerUnescaper.Replace(tok), true
}

var typeNames = map[string]bool{
	"string": true, "number": true, "integer": true, "boolean": true,
	"object": true, "array": true, "null": true,
}

// IsTypeName says whether t names a JSON Schema type.
func IsTypeName(t string) bool { return typeNames[t] }

// Float reads a finite number.
func (v *Value) Float() (float64, bool) {
	if v == nil || v.Kind != KindNumber {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v.Num), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// Count reads a non-negative integer written plainly, without an exponent (1.0 is fine,
// 1e2 is not), and within 32 bits: a form any reader of the schema takes as a count.
func (v *Value) Count() (int, bool) {
	f, ok := v.Float()
	if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 || strings.ContainsAny(string(v.Num), "eE") {
		return 0, false
	}
	return int(f), true
}
