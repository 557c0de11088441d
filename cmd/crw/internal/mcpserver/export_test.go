package mcpserver

// Digest is digest, for tests that plant a key's record.
var Digest = digest
