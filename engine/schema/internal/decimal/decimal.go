// Package decimal holds JSON numbers exactly as written, for the validator: compared and
// divided exactly, never through a float64.
package decimal

import (
	"math/big"
	"strings"
)

// MaxExponent bounds the exponent a number may be written with. RFC 8259 lets a reader
// limit the range of numbers; this one keeps every exponent computation in an int64, far
// beyond any number a schema or an answer means (1e1000000 is fine).
const MaxExponent = 1_000_000_000_000_000

// Decimal is a JSON number exactly as written: Coef × 10^Exp. It is compared and divided
// exactly, never through a float64, whose rounding would decide bounds, multipleOf and
// integer-ness wrongly (12345678901234567891 is not 12345678901234567890, 1e-400 is not 0).
type Decimal struct {
	Neg  bool
	Coef string // significant digits, without leading or trailing zeros; "" is zero
	Exp  int64
}

// Parse reads a number in JSON's syntax (which the caller has checked). It reports
// false for an exponent beyond MaxExponent.
func Parse(s string) (Decimal, bool) {
	var d Decimal
	if strings.HasPrefix(s, "-") {
		d.Neg, s = true, s[1:]
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
			return Decimal{}, false
		}
		for _, c := range expText {
			d.Exp = d.Exp*10 + int64(c-'0')
		}
		if d.Exp > MaxExponent {
			return Decimal{}, false
		}
		if neg {
			d.Exp = -d.Exp
		}
	}
	digits := intPart + frac
	d.Exp -= int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	d.Exp += int64(len(digits) - len(trimmed))
	d.Coef = strings.TrimLeft(trimmed, "0")
	if d.Coef == "" {
		return Decimal{}, true // zero, whatever its sign
	}
	return d, true
}

// IsZero says d is 0.
func (d Decimal) IsZero() bool { return d.Coef == "" }

// IsInteger: the coefficient has no trailing zeros, so only a non-negative exponent
// leaves no fraction.
func (d Decimal) IsInteger() bool { return d.IsZero() || d.Exp >= 0 }

// Cmp compares a and b: -1, 0 or +1.
func (a Decimal) Cmp(b Decimal) int {
	sa, sb := a.Sign(), b.Sign()
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

// Sign is -1, 0 or +1.
func (d Decimal) Sign() int {
	switch {
	case d.IsZero():
		return 0
	case d.Neg:
		return -1
	}
	return 1
}

// cmpMagnitude compares non-zero |a| and |b|: first where their leading digits stand, then
// the digits themselves, which read as 0.Coef compare as strings do.
func cmpMagnitude(a, b Decimal) int {
	la, lb := a.Exp+int64(len(a.Coef)), b.Exp+int64(len(b.Coef))
	switch {
	case la < lb:
		return -1
	case la > lb:
		return 1
	}
	return strings.Compare(a.Coef, b.Coef)
}

// Divisor is a multipleOf, ready to divide by.
type Divisor struct {
	d     Decimal
	coef  *big.Int
	reach int64 // a power of ten at least this high holds every factor 2 and 5 of coef
}

// NewDivisor prepares d, greater than 0, to divide by.
func NewDivisor(d Decimal) *Divisor {
	c, _ := new(big.Int).SetString(d.Coef, 10)
	return &Divisor{d: d, coef: c, reach: 4*int64(len(d.Coef)) + 4}
}

// Divides says whether x is an integer multiple of the Divisor m. With x = cx·10^ex and
// m = cm·10^em, x/m = (cx/cm)·10^(ex-em). When ex < em it needs 10 | cx, which a coefficient
// without trailing zeros never is. Otherwise cm must divide cx·10^(ex-em); a power of ten
// beyond reach adds nothing to that, so the work stays bounded however large ex is
// (1e1000000 costs what 1e40 does) and linear in the digits of x.
func (m *Divisor) Divides(x Decimal) bool {
	if x.IsZero() {
		return true
	}
	shift := x.Exp - m.d.Exp
	if shift < 0 {
		return false
	}
	rem := modDigits(x.Coef, m.coef)
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
