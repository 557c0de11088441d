package journal

import (
	"math"
	"testing"
)

// TestTokensCannotWrapOrGoNegative: a host's negative or absurd counts are clamped, and sums
// saturate instead of wrapping to a negative spending that no budget would stop.
func TestTokensCannotWrapOrGoNegative(t *testing.T) {
	got := Tokens{Input: -1_000_000, Output: 1 << 62, Total: 5}.Bounded()
	if want := (Tokens{Input: 0, Output: 1_000_000_000_000, Total: 5}); got != want {
		t.Fatalf("Bounded = %+v, want %+v", got, want)
	}
	sum := Tokens{Total: math.MaxInt64 - 1}.Add(Tokens{Total: 1 << 62})
	if sum.Total != math.MaxInt64 {
		t.Fatalf("Add = %d, want the int64 maximum", sum.Total)
	}
	if sum := (Tokens{Total: 2}).Add(Tokens{Total: 3}); sum.Total != 5 {
		t.Fatalf("Add = %d, want 5", sum.Total)
	}
}
