package termtext_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/internal/termtext"
)

func TestSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\twith a tab":           "plain text\twith a tab",
		"esc:\x1b[31mRED\x1b]0;title\x07":  `esc:\x1b[31mRED\x1b]0;title\x07`,
		"cr:\rOVER":                        `cr:\x0dOVER`,
		"multi\nfake 12:00:00 crw: forged": "multi\n    fake 12:00:00 crw: forged",
		"bidi \u202eevil\u2066 c1 \u009b":  `bidi \u202eevil\u2066 c1 \u009b`,
		"bad \xff utf8 and é":              `bad \xff utf8 and é`,
		"del\x7f":                          `del\x7f`,
	} {
		assert.Equal(t, want, termtext.Safe(in, "    "), "%q", in)
	}
}

func TestClip(t *testing.T) {
	assert.Equal(t, "short", termtext.Clip("short", 80))
	assert.Equal(t, "abc…", termtext.Clip("abcdef", 3))
	assert.Equal(t, "abc", termtext.Clip("abc", 3))
}
