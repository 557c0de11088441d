package runspec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		wantErr string
	}{
		{in: `null`},
		{in: `{"task":"plain \"quoted\" \\ text \n"}`},
		{in: `"\ud83d\ude00 a pair"`},
		{in: `"\u00e9\u4e2d"`},
		{in: `["\\ud800 is no escape"]`},
		{in: `"é, raw UTF-8"`},
		{in: `"\ud800"`, wantErr: `a lone UTF-16 surrogate \ud800 at byte 1 (it would read as U+FFFD)`},
		{in: `{"k":"x\udc00y"}`, wantErr: `a lone UTF-16 surrogate \udc00 at byte 7 (it would read as U+FFFD)`},
		{in: `"\ud800\u0041"`, wantErr: `a lone UTF-16 surrogate \ud800 at byte 1 (it would read as U+FFFD)`},
		{in: `"\ud800\ud800"`, wantErr: `a lone UTF-16 surrogate \ud800 at byte 1 (it would read as U+FFFD)`},
		{in: `{"\uDBFF":1}`, wantErr: `a lone UTF-16 surrogate \uDBFF at byte 2 (it would read as U+FFFD)`},
		{in: `"ab` + "\xff" + `"`, wantErr: `invalid UTF-8 at byte 3`},
		{in: strings.Repeat("[", 512) + strings.Repeat("]", 512)},
		{in: `["` + strings.Repeat("[", 600) + `"]`},
		{in: strings.Repeat(`{"a":`, 512) + "1" + strings.Repeat("}", 512)},
		{in: strings.Repeat("[", 513) + strings.Repeat("]", 513), wantErr: `nested deeper than 512 levels at byte 512`},
		{in: `{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`, wantErr: `nested deeper than 512 levels at byte 516`},
	}
	for _, tt := range tests {
		err := checkInput([]byte(tt.in))
		if tt.wantErr == "" {
			assert.NoError(t, err, tt.in)
		} else {
			assert.EqualError(t, err, tt.wantErr, tt.in)
		}
	}
}
