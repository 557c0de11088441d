// Package sim is crw's simulator: from a seed it generates a workflow from a grammar of what
// workflows do, an answers script of what models and hosts do to it, and a schedule of faults
// and operator actions; it runs the case on the real engine (real goja, the fake backend, the
// in-memory store, real git), checks named invariants after every step, and shrinks a case that
// breaks one to a minimal workflow, answers and schedule kept in testdata/sim.
//
// A case is run twice: once with its faults (crashes at journal commits, stops, rate limits,
// a token budget, a cancel) and once without, the reference; both get the same operator: it
// answers each decision and gives each verdict the same way, and does only what the run's
// inspection says to do next.
//
// It is over 1,500 lines because the generator, the fault schedule, the operator and the
// invariants are one simulation: each checks what the others made, and none is used alone.
package sim

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Program is a generated workflow: statements of its entry function, in order.
type Program struct {
	Stmts []Stmt `json:"stmts"`
}

// Kinds of statement.
const (
	KindCall     = "call"     // one awaited agent.call
	KindAll      = "all"      // agent.calls in parallel (Promise.all), on distinct nodes
	KindRace     = "race"     // agent.calls raced (Promise.race): the winner is not looked at
	KindLoop     = "loop"     // an agent.call in a loop, its prompt numbered
	KindContinue = "continue" // a continuation of an earlier call, when it has a handle
	KindRetry    = "retry"    // the same call as an earlier one, once its verdict came
	KindDecide   = "decide"   // crw.decide, its question built from an earlier result
	KindCommit   = "commit"   // crw.commit of a node
	KindTier     = "tier"     // crw.tierStep of a node on an earlier null_model
	KindLog      = "log"      // crw.log and console.log
	KindTimer    = "timer"    // a timer, which crw refuses: the refusal is caught
	KindBadCall  = "badcall"  // an agent.call with an invalid option, caught
	KindUnsafe   = "unsafe"   // reads an earlier call's output without looking at its status
)

// Stmt is one statement. Calls name the variables r<N> their results are kept in.
type Stmt struct {
	Kind  string `json:"kind"`
	Calls []Call `json:"calls,omitempty"`
	// Of is the variable an effect, retry, continuation, decision, tier step or unsafe read
	// is about (its number).
	Of int `json:"of,omitempty"`
	// Node is the node of a commit or tier step; ID a decision's id; N a loop's count.
	Node string `json:"node,omitempty"`
	ID   string `json:"id,omitempty"`
	N    int    `json:"n,omitempty"`
	// Built: a decision's schema is built from the result it is about (its description), as
	// its question is: a resume that runs a call a pause held again asks it anew.
	Built bool `json:"built,omitempty"`
}

// Call is one agent.call of a statement.
type Call struct {
	Var    int    `json:"var"`
	Role   string `json:"role"`
	Node   string `json:"node"`
	Prompt string `json:"prompt"`
	// Schema is "" (none: the answer is text), a crw:lib/schemas export, or inline:<name>.
	Schema string `json:"schema,omitempty"`
	// Try wraps the call in try/catch.
	Try bool `json:"try,omitempty"`
}

// Inline schemas the generated workflows define themselves: the generator knows their
// answers, for prose around JSON.
var inlineSchemas = map[string]string{
	"flag":  `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`,
	"items": `{"type":"object","properties":{"items":{"type":"array","items":{"type":"string","enum":["a","b"]},"maxItems":3},"n":{"type":"integer","minimum":0,"maximum":9}},"required":["items","n"],"additionalProperties":false}`,
	"note":  `{"type":"object","properties":{"note":{"type":["string","null"]},"level":{"type":"string","enum":["low","high"]}},"required":["note","level"],"additionalProperties":false}`,
}

// libSchemas are the crw:lib/schemas exports the generator uses.
var libSchemas = []string{"plan", "buildReport", "reviewVerdict", "decision", "findingTriage"}

// decisionSchema is the schema of every generated crw.decide.
const decisionSchema = `{"type":"object","properties":{"go":{"type":"boolean"},"note":{"type":["string","null"]}},"required":["go","note"],"additionalProperties":false}`

// Vars lists the call variables the program defines, in order.
func (p *Program) Vars() []Call {
	var out []Call
	for _, s := range p.Stmts {
		out = append(out, s.Calls...)
	}
	return out
}

// JS renders the program as a workflow.
func (p *Program) JS() string {
	var b strings.Builder
	b.WriteString(`import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";
import crw from "crw";

`)
	for _, name := range []string{"flag", "items", "note"} {
		fmt.Fprintf(&b, "const inline_%s = %s;\n", name, inlineSchemas[name])
	}
	fmt.Fprintf(&b, "const decided = %s;\n\n", decisionSchema)
	b.WriteString(`// What the run saw, in order: every result's status, reason, output and role. Each result turns a
// schema's enum around in place: the next call with it asks with the other order (a schema
// object changed between the calls it is given to, which crw must see every time).
const out = [];
function note(r) {
  // Its meta read through a Proxy, as a script that wraps results does: the role, which no
  // fault changes (its seqs and thread do).
  out.push(r.status + "/" + r.reason + "/" + (r.status === "completed" ? JSON.stringify(r.output) : "-") + "/" + new Proxy(r, {}).meta.role);
  inline_note.properties.level.enum.reverse();
  return r;
}
// Every unknown outcome is waited on for its verdict before the node is touched again.
async function settle(r) {
  if (r.status !== "unknown") return null;
  const v = await crw.effect(r);
  out.push("verdict/" + v.verdict + "/" + JSON.stringify(v.output));
  return v;
}
function caught(what, e) {
  out.push(what + "/" + e.code + "/" + (e.reason || "-"));
}

export default async function main() {
`)
	for _, s := range p.Stmts {
		p.stmtJS(&b, s)
	}
	b.WriteString("  return out;\n}\n")
	return b.String()
}

// options is an agent.call's options object.
func (c Call) options(extra string) string {
	schema := ""
	switch {
	case c.Schema == "":
	case strings.HasPrefix(c.Schema, "inline:"):
		schema = ", schema: inline_" + strings.TrimPrefix(c.Schema, "inline:")
	default:
		schema = ", schema: schemas." + c.Schema
	}
	return fmt.Sprintf("{ role: %q, node: %q, prompt: %s%s%s }", c.Role, c.Node, strconv.Quote(c.Prompt), schema, extra)
}

func v(n int) string { return "r" + strconv.Itoa(n) }

func (p *Program) stmtJS(b *strings.Builder, s Stmt) {
	switch s.Kind {
	case KindCall:
		c := s.Calls[0]
		if c.Try {
			fmt.Fprintf(b, "  let %s;\n  try {\n    %s = note(await agent.call(%s));\n  } catch (e) {\n    caught(\"call\", e);\n    %s = { status: \"thrown\", reason: null, handle: null, output: null };\n  }\n", v(c.Var), v(c.Var), c.options(""), v(c.Var))
		} else {
			fmt.Fprintf(b, "  const %s = note(await agent.call(%s));\n", v(c.Var), c.options(""))
		}
		fmt.Fprintf(b, "  await settle(%s);\n", v(c.Var))
	case KindAll:
		names := make([]string, len(s.Calls))
		calls := make([]string, len(s.Calls))
		for i, c := range s.Calls {
			names[i] = v(c.Var)
			calls[i] = "agent.call(" + c.options("") + ")"
		}
		fmt.Fprintf(b, "  const [%s] = await Promise.all([\n    %s,\n  ]);\n", strings.Join(names, ", "), strings.Join(calls, ",\n    "))
		for _, n := range names {
			fmt.Fprintf(b, "  note(%s);\n", n)
		}
		for _, n := range names {
			fmt.Fprintf(b, "  await settle(%s);\n", n)
		}
	case KindRace:
		calls := make([]string, len(s.Calls))
		for i, c := range s.Calls {
			calls[i] = "agent.call(" + c.options("") + ")"
		}
		// Which call wins depends on timing: only that one did is noted.
		fmt.Fprintf(b, "  await Promise.race([\n    %s,\n  ]);\n  out.push(\"raced\");\n", strings.Join(calls, ",\n    "))
	case KindLoop:
		c := s.Calls[0]
		fmt.Fprintf(b, "  for (let i = 0; i < %d; i++) {\n    const %s = note(await agent.call(%s));\n    await settle(%s);\n  }\n",
			s.N, v(c.Var), strings.Replace(c.options(""), strconv.Quote(c.Prompt), strconv.Quote(c.Prompt+" #")+" + i", 1), v(c.Var))
	case KindContinue:
		c := s.Calls[0]
		fmt.Fprintf(b, "  let %s = null;\n  if (%s.handle) {\n    %s = note(await agent.call(%s));\n    await settle(%s);\n  } else out.push(\"no handle\");\n",
			v(c.Var), v(s.Of), v(c.Var), c.options(", resume: "+v(s.Of)+".handle"), v(c.Var))
	case KindRetry:
		c := s.Calls[0]
		fmt.Fprintf(b, "  if (%s.status === \"unknown\") {\n    const %s = note(await agent.call(%s));\n    await settle(%s);\n  }\n", v(s.Of), v(c.Var), c.options(""), v(c.Var))
	case KindDecide:
		schema := "decided"
		if s.Built {
			schema = "{ ...decided, description: \"after \" + " + v(s.Of) + ".status }"
		}
		fmt.Fprintf(b, "  {\n    const d = await crw.decide({ id: %q, question: \"go on after \" + %s.status + \"?\", schema: %s });\n    out.push(\"decided/\" + d.go);\n  }\n", s.ID, v(s.Of), schema)
	case KindCommit:
		fmt.Fprintf(b, "  try {\n    const k = await crw.commit(%q, { message: %q });\n    out.push(\"commit/\" + k.node + \"/\" + k.tree);\n  } catch (e) {\n    caught(\"commit\", e);\n  }\n", s.Node, "work of "+s.Node)
	case KindTier:
		fmt.Fprintf(b, "  if (%s.status === \"null_model\") {\n    try {\n      out.push(\"tier/\" + crw.tierStep(%q, %s).role);\n    } catch (e) {\n      caught(\"tier\", e);\n    }\n  }\n", v(s.Of), s.Node, v(s.Of))
	case KindLog:
		fmt.Fprintf(b, "  crw.log(%q);\n  console.log(\"step\", out.length);\n", "at "+strconv.Itoa(s.N))
	case KindTimer:
		b.WriteString("  try {\n    setTimeout(() => {}, 1);\n  } catch (e) {\n    caught(\"timer\", e);\n  }\n")
	case KindBadCall:
		b.WriteString("  try {\n    await agent.call({ role: \"planner\", prompt: \"p\" });\n  } catch (e) {\n    caught(\"badcall\", e);\n  }\n")
	case KindUnsafe:
		// A workflow that trusts a call: it throws when the call did not complete.
		fmt.Fprintf(b, "  out.push(\"unsafe/\" + JSON.stringify(%s.output).length + \"/\" + %s.output.constructor.name);\n", v(s.Of), v(s.Of))
	}
}

// MarshalIndent is the program as kept in a case file.
func (p *Program) MarshalIndent() []byte {
	data, _ := json.MarshalIndent(p, "", "  ")
	return data
}
