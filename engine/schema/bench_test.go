package schema

import (
	"bytes"
	"encoding/json"
	"testing"
)

// BenchmarkLoad: what a call's first use of a schema costs: the text read, its digest,
// its strict verdict and its validator (the cache left out).
func BenchmarkLoad(b *testing.B) {
	raw := []byte(reviewSchema)
	b.ReportAllocs()
	for b.Loop() {
		s := parse(raw)
		_ = s.Digest()
		_, _ = s.CheckStrict()
		_, _ = s.Validator()
	}
}

// BenchmarkAnswer: an answer found, validated and compacted, as a call takes it.
func BenchmarkAnswer(b *testing.B) {
	v, err := Compile([]byte(reviewSchema))
	if err != nil {
		b.Fatal(err)
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, []byte(validReview))
	for name, text := range map[string]string{"spaced": validReview, "compact": compact.String(), "prose": "Here it is: " + compact.String()} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := v.Answer(text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
