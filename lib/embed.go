// Package lib holds the built-in JavaScript modules served to workflows as crw:lib/<path>.
package lib

import "embed"

// FS holds the modules; schemas.js is crw:lib/schemas.
//
//go:embed *.js
var FS embed.FS
