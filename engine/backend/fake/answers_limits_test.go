package fake

import (
	"strings"
	"testing"
)

// TestAnswersRefuseCountsThatWouldWrap: token counts beyond journal.MaxTokens and delays
// beyond a day are refused, naming the field, instead of overflowing a sum or a duration.
func TestAnswersRefuseCountsThatWouldWrap(t *testing.T) {
	for _, c := range []struct{ turn, want string }{
		{`{"text":"x","tokens":{"input":4611686018427387904,"output":1}}`, `answers.json: answers[0].turns[0].tokens: counts must be at most 1000000000000`},
		{`{"text":"x","delay_ms":9223372036854775807}`, `answers.json: answers[0].turns[0].delay_ms: must be at most 86400000 (a day)`},
	} {
		_, err := ParseAnswers("answers.json", []byte(`{"answers":[{"match":{"node":"a"},"turns":[`+c.turn+`]}]}`))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.turn, err, c.want)
		}
	}
}
