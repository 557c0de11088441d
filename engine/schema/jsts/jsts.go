// Package jsts reads the official JSON-Schema-Test-Suite files kept in
// engine/schema/testdata/jsts and wraps each group's schema the way crw is held to them: the
// schema becomes property v of a strict object. Tests of the validator and of agent.call use it.
package jsts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Group is one test group of the suite.
type Group struct {
	File        string // relative to the suite's folder, e.g. "optional/bignum.json"
	Description string
	Schema      []byte // wrapped: {"type":"object","properties":{"v":SCHEMA},"required":["v"],"additionalProperties":false}
	Cases       []Case
}

// Case is one test of a group.
type Case struct {
	Description string
	Data        json.RawMessage // as the suite writes it: numbers keep their form
	Valid       bool
}

// Answer is the document a model would answer for the case: {"v": DATA}.
func (c Case) Answer() string { return `{"v":` + string(c.Data) + `}` }

// Key names a case in Differences.
func Key(g Group, c Case) string { return g.File + " | " + g.Description + " | " + c.Description }

// Differences are the cases of kept groups where crw's verdict is not the suite's, each
// with the reason; the tests hold crw to the opposite verdict on exactly these.
var Differences = map[string]string{
	"optional/ecmascript-regex.json | ECMA 262 \\s matches whitespace | Line tabulation matches":                                             `patterns are Go RE2: \s is [\t\n\f\r ], without \v`,
	"optional/ecmascript-regex.json | ECMA 262 \\s matches whitespace | latin-1 non-breaking-space matches":                                  `patterns are Go RE2: \s is ASCII whitespace only`,
	"optional/ecmascript-regex.json | ECMA 262 \\s matches whitespace | zero-width whitespace matches":                                       `patterns are Go RE2: \s is ASCII whitespace only`,
	"optional/ecmascript-regex.json | ECMA 262 \\s matches whitespace | paragraph separator matches (line terminator)":                       `patterns are Go RE2: \s is ASCII whitespace only`,
	"optional/ecmascript-regex.json | ECMA 262 \\s matches whitespace | EM SPACE matches (Space_Separator)":                                  `patterns are Go RE2: \s is ASCII whitespace only`,
	"optional/ecmascript-regex.json | ECMA 262 \\S matches everything but whitespace | Line tabulation does not match":                       `patterns are Go RE2: \s is [\t\n\f\r ], without \v`,
	"optional/ecmascript-regex.json | ECMA 262 \\S matches everything but whitespace | latin-1 non-breaking-space does not match":            `patterns are Go RE2: \S matches non-ASCII whitespace`,
	"optional/ecmascript-regex.json | ECMA 262 \\S matches everything but whitespace | zero-width whitespace does not match":                 `patterns are Go RE2: \S matches non-ASCII whitespace`,
	"optional/ecmascript-regex.json | ECMA 262 \\S matches everything but whitespace | paragraph separator does not match (line terminator)": `patterns are Go RE2: \S matches non-ASCII whitespace`,
	"optional/ecmascript-regex.json | ECMA 262 \\S matches everything but whitespace | EM SPACE does not match (Space_Separator)":            `patterns are Go RE2: \S matches non-ASCII whitespace`,
}

// Load reads every suite file under dir, in file order, groups and cases in the suite's order.
func Load(dir string) ([]Group, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Group
	for _, path := range files {
		rel, _ := filepath.Rel(dir, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var groups []struct {
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Tests       []struct {
				Description string          `json:"description"`
				Data        json.RawMessage `json:"data"`
				Valid       bool            `json:"valid"`
			} `json:"tests"`
		}
		if err := json.Unmarshal(data, &groups); err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		for _, g := range groups {
			wrapped, err := Wrap(g.Schema)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", rel, g.Description, err)
			}
			grp := Group{File: filepath.ToSlash(rel), Description: g.Description, Schema: wrapped}
			for _, c := range g.Tests {
				grp.Cases = append(grp.Cases, Case{Description: c.Description, Data: compact(c.Data), Valid: c.Valid})
			}
			out = append(out, grp)
		}
	}
	return out, nil
}

func compact(data json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return data
	}
	return b.Bytes()
}

// Wrap makes a suite schema property v of a strict object: $schema and every $comment are
// dropped, a top-level $defs moves to the wrapper (so "#/$defs/..." still resolves) and a
// bare "#" becomes "#/properties/v". Numbers keep their written form.
func Wrap(schema json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var s any
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	wrapper := map[string]any{
		"type": "object", "required": []string{"v"}, "additionalProperties": false,
	}
	if obj, ok := s.(map[string]any); ok {
		delete(obj, "$schema")
		if defs, ok := obj["$defs"]; ok {
			wrapper["$defs"] = defs
			delete(obj, "$defs")
			clean(defs, true)
		}
	}
	clean(s, false)
	wrapper["properties"] = map[string]any{"v": s}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(wrapper); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// clean walks the schemas in s (a map of them when named is set): it drops $comment and
// turns a bare "#" reference into "#/properties/v".
func clean(s any, named bool) {
	obj, ok := s.(map[string]any)
	if !ok {
		if arr, ok := s.([]any); ok && !named {
			for _, el := range arr {
				clean(el, false)
			}
		}
		return
	}
	if named {
		for _, sub := range obj {
			clean(sub, false)
		}
		return
	}
	delete(obj, "$comment")
	if ref, ok := obj["$ref"].(string); ok && ref == "#" {
		obj["$ref"] = "#/properties/v"
	}
	for k, sub := range obj {
		switch k {
		case "properties", "$defs", "definitions", "patternProperties", "dependentSchemas":
			clean(sub, true)
		case "items", "additionalProperties", "not", "if", "then", "else", "contains",
			"propertyNames", "unevaluatedItems", "unevaluatedProperties", "anyOf", "allOf", "oneOf", "prefixItems":
			clean(sub, false)
		}
	}
}
