package natives

import "testing"

// The option that bounds runtime-built code reads goja's parser through a mirror of its layout:
// a goja whose parser changed must fail here, not leave eval unbounded (it would refuse every
// eval instead).
func TestParserLayoutMatchesGoja(t *testing.T) {
	if !parserLayoutOK {
		t.Fatal("gojaParser no longer mirrors goja's parser: update it from parser/parser.go")
	}
}
