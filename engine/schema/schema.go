package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/crw-dev/crw/engine/schema/internal/jsontree"
	"github.com/crw-dev/crw/engine/schema/internal/strict"
	"github.com/crw-dev/crw/engine/schema/internal/synth"
	"github.com/crw-dev/crw/engine/schema/internal/validate"
)

// Schema is a schema text read once: its digest, its verdict under the strict rules, its
// validator and its synthesized instance are each made from the one tree read, when first
// asked for, and kept. It is safe for concurrent use.
type Schema struct {
	text   string          // the text, when it is not read into root
	root   *jsontree.Value // nil when the text is not one JSON value within the limits
	err    error           // why root is nil, as CheckStrict, Compile and Synthesize say it
	weight int             // about the bytes it holds

	digestOnce sync.Once
	digest     string

	strictOnce sync.Once
	violations []Violation

	validatorOnce sync.Once
	validator     *Validator
	validatorErr  error
}

// Load returns the schema of raw, read once per distinct text: a workflow passes the same
// few schemas to thousands of calls, and every run's load checks the same built-in ones.
// The schemas read are kept in one cache, shared by every caller in the process and bounded
// in count and in memory (a script that builds a new schema for every call must not make
// the process keep one per call; a schema too large to keep is read again at each use).
func Load(raw []byte) *Schema { return schemas.get(raw) }

// parse reads raw into a Schema, uncached.
func parse(raw []byte) *Schema {
	text := string(raw) // a copy: the caller may change raw
	root, nodes, err := jsontree.Parse(text)
	s := &Schema{root: root, weight: len(raw) + nodeWeight*nodes}
	if err != nil {
		s.text, s.err = text, fmt.Errorf("schema: %w", err) // Digest takes the text as it is
	}
	return s
}

// nodeWeight is about what a value of the tree costs, with what is made of it.
const nodeWeight = 200

// Digest is "sha256:" and the hex SHA-256 of the schema's canonical JSON: object keys
// sorted by their bytes (the last of duplicate keys kept), no insignificant whitespace,
// numbers written as the shortest form of their float64 value, as JavaScript would see
// them. The same value written differently has the same digest. Data that is not exactly
// one JSON value (within the limits of a schema document) is digested as it is.
func (s *Schema) Digest() string {
	s.digestOnce.Do(func() {
		b := []byte(s.text)
		if s.root != nil {
			b = jsontree.AppendCanonical(nil, s.root)
		}
		sum := sha256.Sum256(b)
		s.digest = "sha256:" + hex.EncodeToString(sum[:])
	})
	return s.digest
}

// CheckStrict checks the schema against the strict structured-output rules and returns
// every violation, in the order a walk of the document meets them: a schema's own
// problems first, then its keywords in document order, each subschema as it comes.
// The error is non-nil only when the schema is not exactly one JSON value.
//
// Levels of nesting (rule depth) count object and array schemas: the root object is
// level 1, an object or array schema inside it level 2, and so on; anyOf branches and
// $ref sit at the level of the schema holding them, and a $ref counts the levels of its
// target (a recursive reference is counted once). Properties and enum values are
// counted as written, $defs included. A $ref may recurse only through properties or
// items (rule ref_cycle), which move into a smaller part of the document.
func (s *Schema) CheckStrict() ([]Violation, error) {
	if s.err != nil {
		return nil, s.err
	}
	s.strictOnce.Do(func() { s.violations = strict.Check(s.root) })
	return slices.Clone(s.violations), nil
}

// Validator is the schema compiled for validation. It does not apply the strict rules
// (CheckStrict does), but it refuses what it cannot validate: a keyword outside the strict
// subset, a $ref other than "#/$defs/<name>", a $ref cycle through no properties or items
// (as CheckStrict does), a malformed keyword.
func (s *Schema) Validator() (*Validator, error) {
	if s.err != nil {
		return nil, s.err
	}
	s.validatorOnce.Do(func() {
		s.validator, s.validatorErr = validate.Compile(s.root)
		if s.validatorErr != nil {
			s.validatorErr = fmt.Errorf("schema: %w", s.validatorErr)
		}
	})
	return s.validator, s.validatorErr
}

// Synthesize builds a deterministic instance of the schema, for answers nobody scripted
// (see synth.Build for what it takes of each keyword). What it builds is validated against
// the schema: a schema it cannot satisfy (bounds no number it tries meets, a pattern none
// of its strings match, an enum whose first value breaks another keyword, an instance
// larger than MaxSynthSize) is an error that names the schema's or the instance's pointer.
func (s *Schema) Synthesize() (json.RawMessage, error) {
	if s.err != nil {
		return nil, s.err
	}
	out, err := synth.Build(s.root)
	if err != nil {
		return nil, fmt.Errorf("synthesize: %w", err)
	}
	v, err := s.Validator()
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if err := v.Validate(out); err != nil {
		return nil, fmt.Errorf("synthesize: the instance built does not validate: %w", err)
	}
	return json.RawMessage(out), nil
}

// The cache's bounds: what a generation holds, and the largest schema it keeps.
const (
	cacheEntries   = 256
	cacheWeight    = 16 << 20
	maxEntryWeight = 4 << 20
)

// schemas is the one cache of Load.
var schemas cache

// cache keeps schemas by their text in two generations: a schema found in the old one
// moves to the current one, and a full current generation becomes the old one, the old
// one dropped. What is in use stays; what is not goes within two generations.
type cache struct {
	mu        sync.Mutex
	cur, old  map[string]*Schema
	curWeight int
}

func (c *cache) get(raw []byte) *Schema {
	c.mu.Lock()
	s, ok := c.cur[string(raw)]
	if !ok {
		if s, ok = c.old[string(raw)]; ok {
			c.put(string(raw), s)
		}
	}
	c.mu.Unlock()
	if ok {
		return s
	}
	s = parse(raw) // read outside the lock: a large schema holds up no other
	if s.weight > maxEntryWeight {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if got, ok := c.cur[string(raw)]; ok {
		return got // read meanwhile by another caller: one Schema for everyone
	}
	c.put(string(raw), s)
	return s
}

// put adds s to the current generation; the caller holds mu.
func (c *cache) put(key string, s *Schema) {
	if c.cur == nil || len(c.cur) >= cacheEntries || c.curWeight+s.weight > cacheWeight {
		c.old, c.cur, c.curWeight = c.cur, make(map[string]*Schema), 0
	}
	c.cur[key] = s
	c.curWeight += s.weight
}
