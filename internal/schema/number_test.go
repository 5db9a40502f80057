package schema

import (
	"math/big"
	"testing"
)

func dec(t testing.TB, lit string) decimal {
	t.Helper()
	v, perr := parseJSON([]byte(lit), 1, 1)
	if perr != nil || v.kind != kindNumber {
		t.Fatalf("%q is not a number: %v", lit, perr)
	}
	return v.num
}

// TestDecimalsCompareExactly defends exact numeric comparison.
func TestDecimalsCompareExactly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"0", "-0", 0}, {"0.0", "0e5", 0}, {"1", "1.000", 0}, {"100", "1e2", 0}, {"0.01", "1e-2", 0},
		{"1", "2", -1}, {"-1", "-2", 1}, {"-1", "1", -1}, {"0", "-0.0001", 1},
		{"9007199254740993", "9007199254740992", 1},
		{"123456789012345678901234567890", "123456789012345678901234567891", -1},
		{"0.1", "0.09999999999999999999", 1}, {"1e400", "1e399", 1}, {"-1e-400", "0", -1},
		{"12", "12.5", -1}, {"99", "100", -1},
	}
	for _, tt := range tests {
		a, b := dec(t, tt.a), dec(t, tt.b)
		if got := a.cmp(b); got != tt.want {
			t.Errorf("cmp(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := b.cmp(a); got != -tt.want {
			t.Errorf("cmp(%s, %s) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
		// Cross-check with big.Rat where it can represent the values.
		ra, _ := new(big.Rat).SetString(tt.a)
		rb, _ := new(big.Rat).SetString(tt.b)
		if ra != nil && rb != nil && ra.Cmp(rb) != tt.want {
			t.Errorf("table row %s vs %s disagrees with big.Rat", tt.a, tt.b)
		}
	}
}

// TestMultipleOfIsExact defends multipleOf without float rounding.
func TestMultipleOfIsExact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		x, m string
		want bool
	}{
		{"0", "0.7", true}, {"0.3", "0.1", true}, {"0.35", "0.1", false}, {"4.5", "1.5", true},
		{"1e-9", "1e-10", true}, {"1e-10", "1e-9", false}, {"7", "0.0001", true},
		{"10", "4", false}, {"12", "4", true}, {"-12", "4", true}, {"1e30", "7", false}, {"7e30", "7", true},
		{"9007199254740993", "2", false}, {"9007199254740994", "2", true},
		{"2e999999999", "2", true}, {"1e999999999", "3", false}, {"1", "1", true}, {"0.5", "1", false},
		{"25", "2.5", true}, {"0.0075", "0.0025", true},
	}
	for _, tt := range tests {
		if got := multipleOf(dec(t, tt.x), dec(t, tt.m)); got != tt.want {
			t.Errorf("multipleOf(%s, %s) = %v, want %v", tt.x, tt.m, got, tt.want)
		}
	}
}

// TestCountKeywordsSaturate checks that counts beyond uint64 behave as
// unbounded rather than wrapping.
func TestCountKeywordsSaturate(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"maxLength":1e30,"minItems":0,"maxItems":18446744073709551616}`)
	if r := s.Validate([]byte(`"abc"`)); !r.Valid {
		t.Fatalf("huge maxLength rejected a short string: %+v", r)
	}
	s = mustCompile(t, `{"minLength":1e30}`)
	if r := s.Validate([]byte(`"abc"`)); r.Valid {
		t.Fatal("huge minLength accepted a short string")
	}
}

// TestMultipleOfAgreesWithBigInt cross-checks the chunked modular
// arithmetic against math/big on varied operands.
func TestMultipleOfAgreesWithBigInt(t *testing.T) {
	t.Parallel()
	xs := []string{"1", "18", "123456789012345678901234567890", "99999999999999999999999999999999999999", "7e25", "1.8e-3", "4.2", "1e19", "18446744073709551615", "36893488147419103230"}
	ms := []string{"1", "2", "3", "7", "0.3", "1e-5", "9999999999999999999", "1844674407370955161.5", "0.0000001", "4294967296"}
	for _, xs := range xs {
		for _, ms := range ms {
			x, m := dec(t, xs), dec(t, ms)
			rx, _ := new(big.Rat).SetString(xs)
			rm, _ := new(big.Rat).SetString(ms)
			want := new(big.Rat).Quo(rx, rm).IsInt()
			if got := multipleOf(x, m); got != want {
				t.Errorf("multipleOf(%s, %s) = %v, big.Rat says %v", xs, ms, got, want)
			}
		}
	}
}
