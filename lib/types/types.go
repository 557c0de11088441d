// Package types makes the TypeScript declarations of crw's modules (crw:agent, crw and the
// built-in crw:lib modules) and the tsconfig that maps the module names to them, so tsc and an
// editor check a workflow before any token is spent.
package types

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
)

//go:generate go run ./internal/gendecl

// declarations are crw's modules' own, and (lib/) the built-in crw:lib modules', which go
// generate makes (internal/gendecl): a module's schemas are evaluated when crw is built, not
// when its declarations are written.
//
//go:embed *.d.ts lib/*.d.ts
var declarations embed.FS

// Folder is where Files puts the declarations, relative to the workflows' folder.
const Folder = "crw-types"

// Files are the declarations, by path relative to the workflows' folder: the modules' own, one
// for each built-in crw:lib module (its schemas typed by their answers), and the tsconfig.
func Files() (map[string][]byte, error) {
	out := map[string][]byte{}
	err := fs.WalkDir(declarations, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := declarations.ReadFile(path)
		out[Folder+"/"+path] = b
		return err
	})
	if err != nil {
		return nil, err
	}
	out["tsconfig.json"] = []byte(Tsconfig)
	return out, nil
}

// Marker starts a tsconfig crw types wrote: one without it is the user's, and is left alone.
const Marker = "// Written by crw types"

// Tsconfig checks the workflows of its folder, JavaScript too, against the declarations:
// crw:lib/<path> is the folder's own lib/<path> or a built-in.
const Tsconfig = Marker + `: the declarations of crw's modules for tsc and editors (tsc --noEmit).
{
  "compilerOptions": {
    "target": "ES2022",
    "module": "ES2022",
    "moduleResolution": "bundler",
    "lib": ["ES2022"],
    "types": [],
    "allowJs": true,
    "checkJs": true,
    "strict": true,
    "noEmit": true,
    "paths": {
      "crw": ["./` + Folder + `/crw.d.ts"],
      "crw:agent": ["./` + Folder + `/agent.d.ts"],
      "crw:lib/*": ["./lib/*", "./` + Folder + `/lib/*"]
    }
  },
  "include": ["**/*.js", "**/*.mjs", "**/*.ts"],
  "exclude": ["node_modules", "` + Folder + `"],
  "files": ["./` + Folder + `/globals.d.ts"]
}
`

// Declare is the declaration of a module of schemas: each export a Schema of the type of the
// answers it admits, named after it (plan: Schema<Plan>).
func Declare(module string, exports map[string]json.RawMessage) ([]byte, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "// crw:lib/%s: its schemas, each typed by the answers it admits. Written by `crw types`.\n", module)
	b.WriteString("import type { Schema } from \"../agent\";\n")
	for _, name := range slices.Sorted(maps.Keys(exports)) {
		var s any
		if err := json.Unmarshal(exports[name], &s); err != nil {
			return nil, fmt.Errorf("crw:lib/%s %s: %v", module, name, err)
		}
		root, _ := s.(map[string]any)
		typ := typeName(name)
		fmt.Fprintf(&b, "\n%sexport type %s = %s;\nexport declare const %s: Schema<%s>;\n", doc(root, ""), typ, tsType(root, root, "", 0), name, typ)
	}
	return []byte(b.String()), nil
}

func typeName(export string) string {
	if export == "" {
		return "Answer"
	}
	return strings.ToUpper(export[:1]) + export[1:]
}

// maxDepth bounds the nesting tsType writes out: past it (a recursive $ref) a value is any.
const maxDepth = 12

// tsType is the TypeScript type of the values a schema of the strict subset admits.
func tsType(s, root map[string]any, indent string, depth int) string {
	if s == nil || depth > maxDepth {
		return "any"
	}
	if ref, ok := s["$ref"].(string); ok {
		return tsType(resolve(root, ref), root, indent, depth+1)
	}
	if c, ok := s["const"]; ok {
		return literal(c)
	}
	if e, ok := s["enum"].([]any); ok {
		parts := make([]string, len(e))
		for i, v := range e {
			parts[i] = literal(v)
		}
		return union(parts)
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var parts []string
		for _, a := range alts {
			m, _ := a.(map[string]any)
			parts = append(parts, tsType(m, root, indent, depth+1))
		}
		return union(parts)
	}
	var kinds []string
	switch t := s["type"].(type) {
	case string:
		kinds = []string{t}
	case []any:
		for _, k := range t {
			if k, ok := k.(string); ok {
				kinds = append(kinds, k)
			}
		}
	}
	if len(kinds) == 0 {
		return "any"
	}
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		switch k {
		case "string":
			parts[i] = "string"
		case "number", "integer":
			parts[i] = "number"
		case "boolean":
			parts[i] = "boolean"
		case "null":
			parts[i] = "null"
		case "array":
			items, _ := s["items"].(map[string]any)
			item := tsType(items, root, indent, depth+1)
			if strings.Contains(item, " | ") {
				item = "(" + item + ")"
			}
			parts[i] = "readonly " + item + "[]"
		case "object":
			parts[i] = object(s, root, indent, depth)
		default:
			parts[i] = "any"
		}
	}
	return union(parts)
}

func object(s, root map[string]any, indent string, depth int) string {
	props, _ := s["properties"].(map[string]any)
	if len(props) == 0 {
		return "{}"
	}
	required := map[string]bool{}
	if r, ok := s["required"].([]any); ok {
		for _, n := range r {
			if n, ok := n.(string); ok {
				required[n] = true
			}
		}
	}
	inner := indent + "  "
	var b strings.Builder
	b.WriteString("{\n")
	for _, name := range slices.Sorted(maps.Keys(props)) {
		p, _ := props[name].(map[string]any)
		opt := ""
		if !required[name] {
			opt = "?"
		}
		fmt.Fprintf(&b, "%s%sreadonly %s%s: %s;\n", doc(p, inner), inner, strconv.Quote(name), opt, tsType(p, root, inner, depth+1))
	}
	b.WriteString(indent + "}")
	return b.String()
}

// resolve finds a local reference (#/$defs/name) in the root schema.
func resolve(root map[string]any, ref string) map[string]any {
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var cur any = root
	for _, part := range strings.Split(path, "/") {
		m, _ := cur.(map[string]any)
		cur = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
	}
	m, _ := cur.(map[string]any)
	return m
}

func literal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "any"
	}
	return string(b)
}

func union(parts []string) string {
	parts = slices.Compact(slices.Sorted(slices.Values(parts)))
	if len(parts) == 0 {
		return "never"
	}
	return strings.Join(parts, " | ")
}

// doc is a schema's description as a doc comment, on a line of its own.
func doc(s map[string]any, indent string) string {
	d, _ := s["description"].(string)
	if d == "" {
		return ""
	}
	return indent + "/** " + strings.ReplaceAll(d, "*/", "* /") + " */\n"
}
