package schema

import (
	"math/big"
	"strings"
)

// maxExponent bounds the exponent a number may be written with. RFC 8259 lets a reader
// limit the range of numbers; this one keeps every exponent computation in an int64, far
// beyond any number a schema or an answer means (1e1000000 is fine).
const maxExponent = 1_000_000_000_000_000

// decimal is a JSON number exactly as written: coef × 10^exp. It is compared and divided
// exactly, never through a float64, whose rounding would decide bounds, multipleOf and
// integer-ness wrongly (12345678901234567891 is not 12345678901234567890, 1e-400 is not 0).
type decimal struct {
	neg  bool
	coef string // significant digits, without leading or trailing zeros; "" is zero
	exp  int64
}

// parseDecimal reads a number in JSON's syntax (which the caller has checked). It reports
// false for an exponent beyond maxExponent.
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, expText, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if hasExp {
		neg := false
		switch {
		case strings.HasPrefix(expText, "-"):
			neg, expText = true, expText[1:]
		case strings.HasPrefix(expText, "+"):
			expText = expText[1:]
		}
		expText = strings.TrimLeft(expText, "0")
		if len(expText) > 16 {
			return decimal{}, false
		}
		for _, c := range expText {
			d.exp = d.exp*10 + int64(c-'0')
		}
		if d.exp > maxExponent {
			return decimal{}, false
		}
		if neg {
			d.exp = -d.exp
		}
	}
	digits := intPart + frac
	d.exp -= int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	d.exp += int64(len(digits) - len(trimmed))
	d.coef = strings.TrimLeft(trimmed, "0")
	if d.coef == "" {
		return decimal{}, true // zero, whatever its sign
	}
	return d, true
}

func (d decimal) isZero() bool { return d.coef == "" }

// isInteger: the coefficient has no trailing zeros, so only a non-negative exponent
// leaves no fraction.
func (d decimal) isInteger() bool { return d.isZero() || d.exp >= 0 }

// cmp compares a and b: -1, 0 or +1.
func (a decimal) cmp(b decimal) int {
	sa, sb := a.sign(), b.sign()
	if sa != sb {
		if sa < sb {
			return -1
		}
		return 1
	}
	if sa == 0 {
		return 0
	}
	return sa * cmpMagnitude(a, b)
}

func (d decimal) sign() int {
	switch {
	case d.isZero():
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// cmpMagnitude compares non-zero |a| and |b|: first where their leading digits stand, then
// the digits themselves, which read as 0.coef compare as strings do.
func cmpMagnitude(a, b decimal) int {
	la, lb := a.exp+int64(len(a.coef)), b.exp+int64(len(b.coef))
	switch {
	case la < lb:
		return -1
	case la > lb:
		return 1
	}
	return strings.Compare(a.coef, b.coef)
}

// divisor is a multipleOf, ready to divide by.
type divisor struct {
	d     decimal
	coef  *big.Int
	reach int64 // a power of ten at least this high holds every factor 2 and 5 of coef
}

func newDivisor(d decimal) *divisor {
	c, _ := new(big.Int).SetString(d.coef, 10)
	return &divisor{d: d, coef: c, reach: 4*int64(len(d.coef)) + 4}
}

// divides says whether x is an integer multiple of the divisor m. With x = cx·10^ex and
// m = cm·10^em, x/m = (cx/cm)·10^(ex-em). When ex < em it needs 10 | cx, which a coefficient
// without trailing zeros never is. Otherwise cm must divide cx·10^(ex-em); a power of ten
// beyond reach adds nothing to that, so the work stays bounded however large ex is
// (1e1000000 costs what 1e40 does) and linear in the digits of x.
func (m *divisor) divides(x decimal) bool {
	if x.isZero() {
		return true
	}
	shift := x.exp - m.d.exp
	if shift < 0 {
		return false
	}
	rem := modDigits(x.coef, m.coef)
	if rem.Sign() == 0 {
		return true
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(min(shift, m.reach)), m.coef)
	rem.Mul(rem, p).Mod(rem, m.coef)
	return rem.Sign() == 0
}

// modDigits is digits mod m, read 18 digits at a time so that a long number costs time
// linear in its length (converting it to a big.Int whole is quadratic).
func modDigits(digits string, m *big.Int) *big.Int {
	const chunk = 18
	r := new(big.Int)
	var c big.Int
	for i := 0; i < len(digits); i += chunk {
		part := digits[i:min(i+chunk, len(digits))]
		var n uint64
		for _, ch := range part {
			n = n*10 + uint64(ch-'0')
		}
		r.Mul(r, pow10(len(part)))
		r.Add(r, c.SetUint64(n))
		r.Mod(r, m)
	}
	return r
}

var pow10s = func() (p [19]*big.Int) {
	for i := range p {
		p[i] = new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(i)), nil)
	}
	return p
}()

func pow10(n int) *big.Int { return pow10s[n] }
