// Package schema holds what crw needs of JSON Schema for agent calls: the strict
// structured-output rules a call's schema must follow (CheckStrict), the validation of an
// answer against its schema (Compile, Validator.Validate), the reading of an answer that
// must be one JSON document (ParseAnswer), a deterministic instance for the offline
// backend (Synthesize) and a digest that ignores formatting (Digest).
//
// The strict rules: the root is {"type": "object"}; every object schema (type object, or
// properties) sets "additionalProperties": false and lists every property in required;
// only type, properties, required, additionalProperties, items, enum, const, anyOf, $defs,
// $ref, description, pattern, format, minimum, maximum, exclusiveMinimum,
// exclusiveMaximum, multipleOf, minItems and maxItems appear (annotations such as title,
// default or $schema included, anything else is refused); a $ref is "#/$defs/<name>" of
// the root, and a loop of $ref passes through properties or items (rule ref_cycle); and
// the schema stays within MaxDepth levels of nesting, MaxProperties properties and
// MaxEnumValues enum values.
//
// The validator implements exactly that subset itself (no JSON Schema library): numbers are
// compared and divided as written (decimal), never through a float64; patterns are RE2;
// format is an annotation. Data nested deeper than MaxDataDepth is invalid. It is held to
// the official JSON-Schema-Test-Suite (testdata/jsts, package jsts).
//
// JSON pointers, into a schema (Violation) or into a document (Problem), follow RFC 6901:
// the root is the empty pointer, printed "(root)".
//
// Answers and schemas are read by one JSON parser, internal/jsonscan: linear in time, with
// no recursion, refusing documents nested deeper than MaxDataDepth (answers) or
// MaxSchemaDepth (schemas), and in answers duplicate member names and lone surrogates.
//
// It is larger than crw's other packages (about 2,600 lines) on purpose: the strict rules,
// the validator and the synthesizer each walk the same subset of JSON Schema, and a keyword
// added to one must be added to the others in the same change.
package schema
