package providers

import (
	"errors"
	"math/big"
	"strconv"
)

// errCost is a usage.cost value that is not a non-negative decimal that
// fits in micro-USD.
var errCost = errors.New("providers: usage.cost is not a non-negative decimal within range")

// maxCostText bounds the decimal text of a cost, and maxCostExponent its
// exponent, so that parsing is cheap whatever the provider sends.
const (
	maxCostText     = 64
	maxCostExponent = 40
)

// CostMicroUSD converts a JSON number of US dollars to micro-USD exactly,
// rounding a fraction of a micro-USD up once. Negative, malformed,
// non-finite or overflowing values are errors; floats are never used.
func CostMicroUSD(num string) (uint64, error) {
	if len(num) == 0 || len(num) > maxCostText || num[0] == '-' || num[0] == '+' {
		return 0, errCost
	}
	mant, exp := num, 0
	for i := 0; i < len(num); i++ {
		if num[i] == 'e' || num[i] == 'E' {
			e, err := strconv.Atoi(num[i+1:])
			if err != nil || e > maxCostExponent || e < -maxCostExponent {
				return 0, errCost
			}
			mant, exp = num[:i], e
			break
		}
	}
	if !isJSONDecimal(mant) {
		return 0, errCost
	}
	r, ok := new(big.Rat).SetString(mant)
	if !ok || r.Sign() < 0 {
		return 0, errCost
	}
	if exp+6 >= 0 {
		scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(exp+6)), nil)
		r.Mul(r, new(big.Rat).SetInt(scale))
	} else {
		r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-(exp+6))), nil)))
	}
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsUint64() {
		return 0, errCost
	}
	return q.Uint64(), nil
}

// isJSONDecimal accepts the JSON number grammar without an exponent.
func isJSONDecimal(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}
