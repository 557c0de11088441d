// Package schema holds what crw needs of JSON Schema for agent calls: a schema read once
// (Load) into its digest, which ignores formatting (Digest), its verdict under the strict
// structured-output rules a call's schema must follow (CheckStrict), its validator
// (Compile, Validator.Validate, Validator.Answer) and a deterministic instance for the
// offline backend (Synthesize); and the reading of an answer that must be one JSON
// document (ParseAnswer).
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
// This package is the front of the packages that do the work, each with one job, each
// depending only on those before it:
//
//   - internal/jsonscan, the one JSON parser of answers and schemas: linear in time, with
//     no recursion, refusing documents nested deeper than MaxDataDepth (answers) or
//     MaxSchemaDepth (schemas), and in answers duplicate member names and lone surrogates;
//   - internal/jsontree, a schema document read into a tree, its canonical form and its
//     references;
//   - internal/decimal, numbers as written;
//   - internal/strict, the strict rules, over the tree;
//   - internal/answer, the document found in an answer or read whole, in one scan;
//   - internal/validate, the tree compiled into a Validator, and documents held to it;
//   - internal/synth, an instance built from the tree.
//
// A keyword added to the subset is added to strict, validate and synth in the same change.
package schema
