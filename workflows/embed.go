// Package workflows holds the workflows shipped with crw; each runs offline on the fake backend
// with nothing but its path.
package workflows

import "embed"

// FS holds the shipped workflow files.
//
//go:embed *.js *.ts
var FS embed.FS
