// Package lint is a static pass over a workflow's modules, as the loader parses them: every
// agent.call whose options are written out (an option it does not take, with a did-you-mean; an
// unknown role or effort; a missing role or prompt; a schema written out, or given to schema(),
// that is not strict), a named import crw and crw:agent do not export, and the timers a
// workflow cannot use. It reads goja's AST of the transformed module, whose positions the
// source map takes back to the original file, line and column.
package lint

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/token"

	"github.com/crw-dev/crw/runtime/loader"
	"github.com/crw-dev/crw/runtime/modules/agent"
)

// Finding is one mistake the pass found.
type Finding struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// Rules a Finding names.
const (
	RuleUnknownOption   = "unknown_option"
	RuleBadOption       = "invalid_option"
	RuleMissingOption   = "missing_option"
	RuleSchemaNotStrict = "schema_not_strict"
	RuleNoSuchExport    = "no_such_export"
	RuleNondeterminism  = "nondeterministic"
)

// MaxFindings bounds what a Collector keeps.
const MaxFindings = 1000

// Collector gathers the findings of every module the loader parses; it is safe for concurrent
// use.
type Collector struct {
	checkSchema func([]byte) []loader.Problem

	mu       sync.Mutex
	findings []Finding
	more     int
	// executors are the agent.calls whose role is written out as an executor's, first few.
	executors []Finding
}

// maxExecutors bounds the executor calls a Collector keeps: a run's refusal names the first.
const maxExecutors = 16

// Executors are the agent.calls whose role is written out as an executor's (executor,
// executor-t1), in the order the modules were parsed, their rule empty: the calls that need
// the run's repository, where the pass can see them.
func (c *Collector) Executors() []Finding {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.executors)
}

// New returns a Collector whose schemas are held to check (the strict rules).
func New(check func([]byte) []loader.Problem) *Collector { return &Collector{checkSchema: check} }

// Findings are what the pass found, in the order of the modules' parsing, and how many more
// were left out past MaxFindings.
func (c *Collector) Findings() ([]Finding, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.findings), c.more
}

func (c *Collector) add(f Finding) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.findings) >= MaxFindings {
		c.more++
		return
	}
	c.findings = append(c.findings, f)
}

// Module passes over one parsed module; src is its source as written.
func (c *Collector) Module(prog *ast.Program, src []byte) {
	m := &module{c: c, file: prog.File, consts: map[string]ast.Expression{}, twice: map[string]bool{}, imports: map[string]string{},
		bound: map[string]int{}, agents: map[string]bool{}, seen: map[*ast.Binding]bool{}, reported: map[string]bool{}}
	m.namedImports(prog.File.Name(), src)
	walk(reflect.ValueOf(prog), m.collect)
	walk(reflect.ValueOf(prog), m.check)
}

// importRE finds the named imports of crw's native modules in a module's source.
var importRE = regexp.MustCompile(`(?m)\bimport\s*(?:[A-Za-z_$][\w$]*\s*,\s*)?\{([^}]*)\}\s*from\s*["'](crw|crw:agent)["']`)

// namedImports reports the names imported from crw or crw:agent that they do not export, at
// the import, used or not.
func (m *module) namedImports(file string, src []byte) {
	for _, loc := range importRE.FindAllSubmatchIndex(src, -1) {
		spec := string(src[loc[4]:loc[5]])
		list := string(src[loc[2]:loc[3]])
		off := loc[2]
		for _, part := range strings.Split(list, ",") {
			lead := len(part) - len(strings.TrimLeft(part, " \t\r\n"))
			name := strings.Fields(part)
			if len(name) == 0 {
				off += len(part) + 1
				continue
			}
			if name[0] == "type" && len(name) > 1 {
				// TypeScript: import { type X } names a type, which compiles to nothing: tsc
				// checks it, against crw's typings.
				off += len(part) + 1
				continue
			}
			if !slices.Contains(exported[spec], name[0]) {
				hint := ""
				if spec == "crw" {
					hint = `: import crw from "crw"`
				}
				line, col := lineCol(src, off+lead)
				m.c.add(Finding{File: file, Line: line, Col: col, Rule: RuleNoSuchExport, Message: fmt.Sprintf("the module %s has no export %q%s", spec, name[0], hint)})
				m.reported[spec+"\x00"+name[0]] = true
			}
			off += len(part) + 1
		}
	}
}

// lineCol is the 1-based line and column (in UTF-16 units, as goja counts) of byte off.
func lineCol(src []byte, off int) (int, int) {
	line, start := 1, 0
	for i := 0; i < off && i < len(src); i++ {
		if src[i] == '\n' {
			line, start = line+1, i+1
		}
	}
	col := 1
	for _, r := range string(src[start:min(off, len(src))]) {
		col++
		if r > 0xFFFF {
			col++
		}
	}
	return line, col
}

// timers are the globals a workflow cannot use: their timing cannot be replayed.
var timers = []string{"setTimeout", "setInterval", "setImmediate", "clearTimeout", "clearInterval", "queueMicrotask"}

// exported are what crw's native modules export, by module.
var exported = map[string][]string{"crw": {"default"}, "crw:agent": {"agent", "default", "schema"}}

type module struct {
	c    *Collector
	file *file.File
	// consts are the names bound once to a literal (const plan = {...}); twice those bound more
	// often, which the pass leaves alone.
	consts map[string]ast.Expression
	twice  map[string]bool
	// imports are the names bound to require("crw") or require("crw:agent"), by name; agents
	// the names crw:agent's agent is destructured into (const { agent } = require(...)).
	imports map[string]string
	agents  map[string]bool
	// bound counts each name's bindings anywhere in the module (parameters, declarations,
	// functions, classes): the pass resolves by name only one bound once and never assigned
	// again (twice), so a parameter or a local of another function is never taken for it.
	bound map[string]int
	seen  map[*ast.Binding]bool
	// reported are the named imports found at their import statement (spec NUL name).
	reported map[string]bool
}

func (m *module) bind(name string) {
	m.bound[name]++
	if m.bound[name] > 1 {
		m.twice[name] = true
	}
}

// root is the name an assignment target starts from (x, x.y, x[0].z).
func root(e ast.Expression) string {
	for {
		switch x := e.(type) {
		case *ast.Identifier:
			return x.Name.String()
		case *ast.DotExpression:
			e = x.Left
		case *ast.BracketExpression:
			e = x.Left
		default:
			return ""
		}
	}
}

func (m *module) at(idx file.Idx, rule, format string, args ...any) {
	p := m.file.Position(int(idx) - m.file.Base())
	m.c.add(Finding{File: p.Filename, Line: p.Line, Col: p.Column, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// executor records an agent.call of an executor's role at idx.
func (m *module) executor(idx file.Idx, role string) {
	p := m.file.Position(int(idx) - m.file.Base())
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.executors) < maxExecutors {
		c.executors = append(c.executors, Finding{File: p.Filename, Line: p.Line, Col: p.Column, Message: role})
	}
}

// collect records the module's bindings the pass resolves names by.
func (m *module) collect(n any) {
	switch x := n.(type) {
	case *ast.FunctionLiteral:
		if x.Name != nil {
			m.bind(x.Name.Name.String())
		}
	case *ast.ClassLiteral:
		if x.Name != nil {
			m.bind(x.Name.Name.String())
		}
	case *ast.AssignExpression:
		if name := root(x.Left); name != "" {
			m.twice[name] = true // assigned again, or one of its members is
		}
	case *ast.UnaryExpression:
		if x.Operator == token.INCREMENT || x.Operator == token.DECREMENT {
			if name := root(x.Operand); name != "" {
				m.twice[name] = true
			}
		}
	case *ast.Binding:
		if m.seen[x] {
			return // a var declaration is listed twice: where it is, and hoisted
		}
		m.seen[x] = true
		switch t := x.Target.(type) {
		case *ast.Identifier:
			name := t.Name.String()
			m.bind(name)
			if x.Initializer == nil {
				return
			}
			m.consts[name] = x.Initializer
			if spec, ok := requireOf(x.Initializer); ok && exported[spec] != nil {
				m.imports[name] = spec
			}
		case *ast.ObjectPattern:
			spec, _ := requireOf(x.Initializer)
			for _, p := range t.Properties {
				switch p := p.(type) {
				case *ast.PropertyShort:
					m.bind(p.Name.Name.String())
					if spec == "crw:agent" && p.Name.Name.String() == "agent" {
						m.agents["agent"] = true
					}
				case *ast.PropertyKeyed:
					if id, ok := p.Value.(*ast.Identifier); ok {
						m.bind(id.Name.String())
						if k, ok := p.Key.(*ast.StringLiteral); ok && spec == "crw:agent" && k.Value.String() == "agent" {
							m.agents[id.Name.String()] = true
						}
					}
				}
			}
		}
	}
}

// requireOf reads require("x"), or esbuild's __toESM(require("x")).
func requireOf(e ast.Expression) (string, bool) {
	call, ok := e.(*ast.CallExpression)
	if !ok || len(call.ArgumentList) != 1 {
		return "", false
	}
	if id, ok := call.Callee.(*ast.Identifier); ok {
		switch id.Name.String() {
		case "require":
			if s, ok := call.ArgumentList[0].(*ast.StringLiteral); ok {
				return s.Value.String(), true
			}
		case "__toESM":
			return requireOf(call.ArgumentList[0])
		}
	}
	return "", false
}

func (m *module) check(n any) {
	switch x := n.(type) {
	case *ast.Identifier:
		if slices.Contains(timers, x.Name.String()) && m.bound[x.Name.String()] == 0 {
			m.at(x.Idx, RuleNondeterminism, "%s is not available in a workflow: its timing cannot be replayed", x.Name)
		}
	case *ast.DotExpression:
		if id, ok := x.Left.(*ast.Identifier); ok {
			if spec := m.imports[id.Name.String()]; spec != "" && !slices.Contains(exported[spec], x.Identifier.Name.String()) && !m.reported[spec+"\x00"+x.Identifier.Name.String()] {
				hint := ""
				if spec == "crw" {
					hint = `: import crw from "crw"`
				}
				m.at(x.Identifier.Idx, RuleNoSuchExport, "the module %s has no export %q%s", spec, x.Identifier.Name, hint)
			}
		}
	case *ast.CallExpression:
		if m.isAgentCall(x.Callee) && len(x.ArgumentList) > 0 {
			if o, ok := x.ArgumentList[0].(*ast.ObjectLiteral); ok {
				m.options(o, x.LeftParenthesis)
			}
		}
	}
}

// isAgentCall reads agent.call, x.agent.call and x.default.call where x is crw:agent's.
func (m *module) isAgentCall(callee ast.Expression) bool {
	d, ok := callee.(*ast.DotExpression)
	if !ok || d.Identifier.Name.String() != "call" {
		return false
	}
	switch l := d.Left.(type) {
	case *ast.Identifier:
		return m.agents[l.Name.String()] && !m.twice[l.Name.String()]
	case *ast.DotExpression:
		name := l.Identifier.Name.String()
		if id, ok := l.Left.(*ast.Identifier); ok && m.imports[id.Name.String()] == "crw:agent" {
			return name == "agent" || name == "default"
		}
	}
	return false
}

func (m *module) options(o *ast.ObjectLiteral, at file.Idx) {
	seen := map[string]bool{}
	spread := false
	for _, p := range o.Value {
		var name string
		var value ast.Expression
		var idx file.Idx
		switch p := p.(type) {
		case *ast.PropertyKeyed:
			if p.Computed {
				spread = true
				continue
			}
			switch k := p.Key.(type) {
			case *ast.StringLiteral:
				name, idx = k.Value.String(), k.Idx
			case *ast.Identifier:
				name, idx = k.Name.String(), k.Idx
			default:
				spread = true
				continue
			}
			value = p.Value
		case *ast.PropertyShort:
			name, idx, value = p.Name.Name.String(), p.Name.Idx, &p.Name
			if v, ok := m.consts[name]; ok && !m.twice[name] {
				value = v
			}
		default: // a spread: what it holds is seen when the call runs
			spread = true
			continue
		}
		seen[name] = true
		if !slices.Contains(agent.Options, name) {
			m.at(idx, RuleUnknownOption, "agent.call: unknown option %q%s (it takes %s)", name, didYouMean(name, agent.Options), strings.Join(agent.Options, ", "))
			continue
		}
		m.value(name, value)
	}
	if !spread {
		for _, name := range []string{"role", "prompt"} {
			if !seen[name] {
				m.at(at, RuleMissingOption, "agent.call: option %q is required", name)
			}
		}
	}
}

// value checks an option's value where it is written out.
func (m *module) value(name string, v ast.Expression) {
	c := m.c
	if id, ok := v.(*ast.Identifier); ok && !m.twice[id.Name.String()] {
		if bound, ok := m.consts[id.Name.String()]; ok {
			v = bound
		}
	}
	switch name {
	case "role", "effort":
		allowed := agent.Roles
		if name == "effort" {
			allowed = agent.Efforts
		}
		if s, ok := v.(*ast.StringLiteral); ok && !slices.Contains(allowed, s.Value.String()) {
			m.at(s.Idx, RuleBadOption, "agent.call: %s %q is not one of %s%s", name, s.Value, strings.Join(allowed, ", "), didYouMean(s.Value.String(), allowed))
		} else if ok && name == "role" && strings.HasPrefix(s.Value.String(), "executor") {
			m.executor(s.Idx, s.Value.String())
		}
	case "prompt":
		if s, ok := v.(*ast.StringLiteral); ok && strings.TrimSpace(s.Value.String()) == "" {
			m.at(s.Idx, RuleBadOption, "agent.call: prompt is empty")
		}
	case "schema":
		if c.checkSchema == nil {
			return
		}
		if arg := m.schemaArg(v); arg != nil {
			v = arg
			if id, ok := v.(*ast.Identifier); ok && !m.twice[id.Name.String()] && m.consts[id.Name.String()] != nil {
				v = m.consts[id.Name.String()]
			}
		}
		o, ok := v.(*ast.ObjectLiteral)
		if !ok {
			return
		}
		doc, ok := m.literal(o, 0)
		if !ok {
			return // not all of it is written out: the dry run checks it
		}
		raw, err := json.Marshal(doc)
		if err != nil {
			return
		}
		if problems := c.checkSchema(raw); len(problems) > 0 {
			p := problems[0]
			m.at(o.LeftBrace, RuleSchemaNotStrict, "agent.call: the schema is not strict: at %q: %s", p.Pointer, p.Message)
		}
	}
}

// schemaArg is x of schema(x), crw:agent's schema (esbuild's (0, m.schema)(x), or m.schema(x)),
// which returns x: it only types x for tsc. Else nil.
func (m *module) schemaArg(e ast.Expression) ast.Expression {
	call, ok := e.(*ast.CallExpression)
	if !ok || len(call.ArgumentList) != 1 {
		return nil
	}
	callee := call.Callee
	if seq, ok := callee.(*ast.SequenceExpression); ok && len(seq.Sequence) == 2 {
		callee = seq.Sequence[1]
	}
	d, ok := callee.(*ast.DotExpression)
	if !ok || d.Identifier.Name.String() != "schema" {
		return nil
	}
	if id, ok := d.Left.(*ast.Identifier); !ok || m.imports[id.Name.String()] != "crw:agent" || m.twice[id.Name.String()] {
		return nil
	}
	return call.ArgumentList[0]
}

// maxLiteral bounds the nesting literal follows.
const maxLiteral = 64

// literal is the JSON value an expression writes out, when all of it is written out (constants
// it names included).
func (m *module) literal(e ast.Expression, depth int) (any, bool) {
	if depth > maxLiteral {
		return nil, false
	}
	switch x := e.(type) {
	case *ast.StringLiteral:
		return x.Value.String(), true
	case *ast.NumberLiteral:
		return x.Value, true
	case *ast.BooleanLiteral:
		return x.Value, true
	case *ast.NullLiteral:
		return nil, true
	case *ast.Identifier:
		if v, ok := m.consts[x.Name.String()]; ok && !m.twice[x.Name.String()] {
			return m.literal(v, depth+1)
		}
	case *ast.ArrayLiteral:
		out := make([]any, 0, len(x.Value))
		for _, v := range x.Value {
			item, ok := m.literal(v, depth+1)
			if !ok {
				return nil, false
			}
			out = append(out, item)
		}
		return out, true
	case *ast.ObjectLiteral:
		out := map[string]any{}
		for _, p := range x.Value {
			k, ok := p.(*ast.PropertyKeyed)
			if !ok || k.Computed {
				return nil, false
			}
			var key string
			switch kk := k.Key.(type) {
			case *ast.StringLiteral:
				key = kk.Value.String()
			case *ast.Identifier:
				key = kk.Name.String()
			case *ast.NumberLiteral:
				key = kk.Literal
			default:
				return nil, false
			}
			v, ok := m.literal(k.Value, depth+1)
			if !ok {
				return nil, false
			}
			out[key] = v
		}
		return out, true
	}
	return nil, false
}

// didYouMean names the closest of names to s, when one is close.
func didYouMean(s string, names []string) string {
	best, dist := "", 3
	for _, n := range names {
		if d := distance(strings.ToLower(s), strings.ToLower(n)); d < dist {
			best, dist = n, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + strconv.Quote(best) + "?)"
}

// distance is the edit distance of a and b, transpositions counting one.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

var astPkg = reflect.TypeOf(ast.Program{}).PkgPath()

// walk calls visit on every node of goja's AST below v: the structs of package ast, through
// their pointers, interfaces and slices (nothing else: file.File and its source map are not
// nodes).
func walk(v reflect.Value, visit func(any)) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || v.Elem().Type().PkgPath() != astPkg {
			return
		}
		if v.Elem().Kind() == reflect.Struct {
			visit(v.Interface())
		}
		walk(v.Elem(), visit)
	case reflect.Interface:
		if !v.IsNil() {
			walk(v.Elem(), visit)
		}
	case reflect.Slice:
		for i := range v.Len() {
			walk(v.Index(i), visit)
		}
	case reflect.Struct:
		if v.Type().PkgPath() != astPkg {
			return
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.CanInterface() {
				walk(f, visit)
			}
		}
	}
}
