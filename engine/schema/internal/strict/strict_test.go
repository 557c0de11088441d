package strict

import "testing"

// The list of allowed keywords is the one the package schema documents, and its tests
// use each of them.
func TestAllowedKeywords(t *testing.T) {
	if len(allowedKeywords) != 20 {
		t.Errorf("the strict list has 20 keywords, the table %d", len(allowedKeywords))
	}
}
