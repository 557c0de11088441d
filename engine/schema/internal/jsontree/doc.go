// Package jsontree is a schema document read into a tree, as every reader of a schema in
// crw takes it (the strict rules, the compiler of validators, the synthesizer, the digest):
// Parse, within the limits of a schema document (MaxSchemaDepth, MaxSchemaSize), by
// jsonscan; the tree written back (AppendJSON) or in its canonical form (AppendCanonical);
// RFC 6901 pointers into it; and what all of them need of its references: the definition a
// $ref names (DefName) and the $ref cycles no document can get out of (Cycles).
package jsontree
