package schema

import (
	"encoding/json"

	"github.com/crw-dev/crw/engine/schema/internal/answer"
	"github.com/crw-dev/crw/engine/schema/internal/jsontree"
	"github.com/crw-dev/crw/engine/schema/internal/strict"
	"github.com/crw-dev/crw/engine/schema/internal/synth"
	"github.com/crw-dev/crw/engine/schema/internal/validate"
)

// Limits of a strict schema.
const (
	MaxDepth      = strict.MaxDepth      // levels of nested object and array schemas, the root object being level 1
	MaxProperties = strict.MaxProperties // properties across the whole schema, $defs included
	MaxEnumValues = strict.MaxEnumValues // enum values across the whole schema
)

// Limits of a schema's JSON document, far beyond what the strict rules let through, so
// that reading and checking any schema takes bounded time and memory (the largest costs
// about 70 MB: BenchmarkCheckStrictLargest).
const (
	// MaxSchemaDepth is how deeply a schema document may nest (arrays and objects, the
	// root being level 1). A strict schema nests at most MaxDepth object and array
	// schemas, two or three levels of JSON each.
	MaxSchemaDepth = jsontree.MaxSchemaDepth
	// MaxSchemaSize is the largest schema document, in bytes.
	MaxSchemaSize = jsontree.MaxSchemaSize
)

// MaxDataDepth is how deeply an answer's data may nest (arrays and objects, the top-level
// value being level 1). One rule for every reader of answer data: the parser and the
// validator refuse deeper data, and the CallResult builder (runtime/jsutil, 512 levels
// with the result's own wrapping) takes all they accept, so a journaled answer can always
// be delivered.
const MaxDataDepth = answer.MaxDataDepth

// MaxSynthSize bounds a synthesized instance, in bytes: minItems multiplied through nested
// arrays could otherwise ask for more memory than the host has.
const MaxSynthSize = synth.MaxSize

// Rule names of a Violation. They are stable: callers and users match on them.
const (
	RuleRootNotObject        = strict.RuleRootNotObject
	RuleAdditionalProperties = strict.RuleAdditionalProperties
	RuleRequired             = strict.RuleRequired
	RuleKeyword              = strict.RuleKeyword
	RuleDepth                = strict.RuleDepth
	RulePropertiesCount      = strict.RulePropertiesCount
	RuleEnumCount            = strict.RuleEnumCount
	RuleBadRef               = strict.RuleBadRef
	RuleRefCycle             = strict.RuleRefCycle
	RuleType                 = strict.RuleType
	RuleInvalid              = strict.RuleInvalid
)

var (
	// ErrNotJSON is wrapped by the errors of CheckStrict, Compile and Synthesize when their
	// input is not exactly one JSON value.
	ErrNotJSON = jsontree.ErrNotJSON
	// ErrTooLarge is wrapped by the errors of CheckStrict, Compile and Synthesize when their
	// input goes beyond MaxSchemaDepth or MaxSchemaSize.
	ErrTooLarge = jsontree.ErrTooLarge
)

// Errors of ParseAnswer. Their messages are short and stable: they go into repair prompts.
var (
	ErrNoJSON      = answer.ErrNoJSON
	ErrTextAfter   = answer.ErrTextAfter
	ErrMultiple    = answer.ErrMultiple
	ErrInvalidJSON = answer.ErrInvalidJSON // wrapped with the parser's complaint
)

// Violation is one way a schema breaks the strict rules: Pointer (an RFC 6901 pointer
// into the schema), Rule and Message.
type Violation = strict.Violation

// Validator validates documents against one schema, compiled once; it is safe for
// concurrent use. Validate checks a document; Answer takes the document out of a model's
// answer (as ParseAnswer does), validates it and gives it back compact, reading it once.
//
// It validates the strict subset itself, over numbers exactly as written: type,
// properties, required, additionalProperties, items, enum, const, anyOf, $defs and $ref,
// pattern (Go's RE2 syntax), minimum, maximum, exclusiveMinimum, exclusiveMaximum,
// multipleOf, minItems and maxItems; description and format are annotations.
type Validator = validate.Validator

// Problem is one reason a document does not match its schema: Path (an RFC 6901 pointer
// into the document), Keyword and Message.
type Problem = validate.Problem

// ValidationError lists what is wrong with a document, each problem where it is.
type ValidationError = validate.ValidationError

// Digest is Load(data).Digest().
func Digest(data []byte) string { return Load(data).Digest() }

// CheckStrict is Load(schema).CheckStrict().
func CheckStrict(schema []byte) ([]Violation, error) { return Load(schema).CheckStrict() }

// Compile is Load(schema).Validator().
func Compile(schema []byte) (*Validator, error) { return Load(schema).Validator() }

// Synthesize is Load(schema).Synthesize().
func Synthesize(schema []byte) (json.RawMessage, error) { return Load(schema).Synthesize() }

// ParseAnswer takes the JSON document out of a model's answer.
//
// The answer is valid when it is exactly one JSON value, surrounding whitespace aside;
// a second value, a stray closing bracket or any text after the value is invalid. An
// answer that starts with "{" or "[" is that document, whatever follows it.
//
// When the answer is prose followed by a JSON object that ends the message, the object
// is taken out and extracted is true: the object starting at the earliest "{" from which
// the rest of the message is exactly one object, so an object nested in it never wins.
// Only an object is taken out this way, never an array or a scalar. An object that opens
// and never closes makes the answer invalid (a truncated answer), rather than letting an
// object nested in it pass for the answer.
//
// A fenced block ("```json" ... "```") is invalid: the closing fence is text after the
// document, and the error says so.
//
// The document follows RFC 8259 with the refusals it allows, which make every accepted
// document deliverable to a script as it was written: an object with two members of the
// same name (compared as they read, escapes decoded), a string with an escaped lone UTF-16
// surrogate ("\ud800") or invalid UTF-8, and data nested deeper than MaxDataDepth are
// invalid JSON, and the error says where. Numbers are kept as written, whatever their size.
//
// ParseAnswer does not look at the schema: a valid array or scalar is returned as is and
// the schema's validation refuses it (Validator.Answer does both). It takes time linear in
// the answer's length.
func ParseAnswer(text string) (doc json.RawMessage, extracted bool, err error) {
	found, extracted, _, err := answer.Find(text, answer.Reading{})
	if err != nil {
		return nil, false, err
	}
	return json.RawMessage(found), extracted, nil
}
