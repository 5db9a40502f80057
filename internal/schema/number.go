package schema

import (
	"math/bits"
	"strings"
)

// decimal is an exact JSON number: (-1)^neg × digits × 10^exp, where digits
// has no leading or trailing zeros. Zero is the empty digit string with neg
// false, so -0 and 0 are the same number and equality is field equality.
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

// newDecimal normalizes a number from its integer and fraction digit strings
// and its exponent.
func newDecimal(neg bool, intPart, frac string, exp int64) decimal {
	all := intPart + frac
	exp -= int64(len(frac))
	trimmed := strings.TrimLeft(all, "0")
	if trimmed == "" {
		return decimal{}
	}
	end := len(trimmed)
	for end > 0 && trimmed[end-1] == '0' {
		end--
	}
	exp += int64(len(trimmed) - end)
	return decimal{neg: neg, digits: trimmed[:end], exp: exp}
}

func (d decimal) isZero() bool { return d.digits == "" }

// isInteger reports whether d has no fractional part (2020-12 treats 1.0 as
// an integer).
func (d decimal) isInteger() bool { return d.isZero() || d.exp >= 0 }

// cmp compares two decimals exactly.
func (d decimal) cmp(o decimal) int {
	ds, os := d.sign(), o.sign()
	if ds != os {
		if ds < os {
			return -1
		}
		return 1
	}
	if ds == 0 {
		return 0
	}
	m := cmpMagnitude(d, o)
	if ds < 0 {
		return -m
	}
	return m
}

func (d decimal) sign() int {
	switch {
	case d.isZero():
		return 0
	case d.neg:
		return -1
	default:
		return 1
	}
}

// cmpMagnitude compares |a| and |b| for non-zero a and b. The position of
// the most significant digit decides first; then the digit strings compare
// lexicographically, which is numeric order because neither has trailing
// zeros.
func cmpMagnitude(a, b decimal) int {
	ma := int64(len(a.digits)) + a.exp
	mb := int64(len(b.digits)) + b.exp
	switch {
	case ma < mb:
		return -1
	case ma > mb:
		return 1
	}
	return strings.Compare(a.digits, b.digits)
}

// toUint64 returns the value of a non-negative integer decimal saturated at
// max, or 0 and false when d is negative or not an integer.
func (d decimal) toUint64(limit uint64) (uint64, bool) {
	if d.neg && !d.isZero() || !d.isInteger() {
		return 0, false
	}
	if d.isZero() {
		return 0, true
	}
	if int64(len(d.digits))+d.exp > 19 {
		return limit, true
	}
	var n uint64
	for i := 0; i < len(d.digits); i++ {
		n = n*10 + uint64(d.digits[i]-'0')
	}
	for range d.exp {
		n *= 10
	}
	return min(n, limit), true
}

// maxMultipleOfDigits bounds the significant digits of a multipleOf value,
// so the divisor fits a uint64 and the test runs in time linear in the
// instance number's length.
const maxMultipleOfDigits = 19

// multipleOf reports whether x is an integer multiple of m, exactly. m is
// positive with at most maxMultipleOfDigits significant digits (checked at
// compile time).
//
// With x = dx·10^ex and m = dm·10^em, x/m = (dx/dm)·10^(ex-em). When
// ex ≥ em the test is dx·10^(ex-em) ≡ 0 (mod dm), computed digit chunk by
// digit chunk and with modular exponentiation, so neither a long digit string
// nor a huge exponent costs more than a linear pass. When ex < em, m·k = x
// would need 10 to divide dx, which has no trailing zeros, so x is no
// multiple.
func multipleOf(x, m decimal) bool {
	if x.isZero() {
		return true
	}
	if x.exp < m.exp {
		return false
	}
	var dm uint64 // m's digits as an integer; 19 digits fit a uint64
	for i := 0; i < len(m.digits); i++ {
		dm = dm*10 + uint64(m.digits[i]-'0')
	}
	if dm == 1 {
		return true
	}
	r := modDigits(x.digits, dm)
	return mulMod(r, powMod(10, uint64(x.exp-m.exp), dm), dm) == 0
}

// modDigits returns the decimal digit string s modulo d, 18 digits at a time.
func modDigits(s string, d uint64) uint64 {
	const chunk = 18
	var r uint64
	for len(s) > 0 {
		n := min(chunk, len(s))
		var c, scale uint64 = 0, 1
		for i := 0; i < n; i++ {
			c = c*10 + uint64(s[i]-'0')
			scale *= 10
		}
		s = s[n:]
		// r·scale + c < d·2^64 because r < d and scale, c < 2^64.
		hi, lo := bits.Mul64(r, scale)
		lo, carry := bits.Add64(lo, c, 0)
		hi += carry
		_, r = bits.Div64(hi%d, lo, d)
	}
	return r
}

func mulMod(a, b, d uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	_, r := bits.Div64(hi%d, lo, d)
	return r
}

func powMod(base, exp, d uint64) uint64 {
	result := uint64(1) % d
	base %= d
	for exp > 0 {
		if exp&1 == 1 {
			result = mulMod(result, base, d)
		}
		base = mulMod(base, base, d)
		exp >>= 1
	}
	return result
}
