package compaction

import "math/bits"

// The constants of the reference's token estimate: a request of B bytes
// holding N messages and tools is (B + FramingBytes + ItemBytes×N) / 4
// tokens, rounded up. There is no tokenizer.
const (
	FramingBytes  = 512
	ItemBytes     = 64
	BytesPerToken = 4
)

// EstimateTokens is the reference's token estimate of a request of bytes
// bytes holding items messages and tool descriptors.
func EstimateTokens(bytes uint64, items int) uint64 {
	n := satAdd(bytes, FramingBytes)
	n = satAdd(n, satMul(ItemBytes, uint64(max(items, 0))))
	return n/BytesPerToken + min(n%BytesPerToken, 1)
}

// Calibration corrects the estimate with what a provider reported: per
// exact profile (provider and model), the last nonzero reported input
// usage and the estimate of the request it answered. A later estimate for
// that profile is the larger of the reference's estimate and the estimate
// scaled by that observed ratio: the estimate only ever errs towards
// compacting early. The zero value knows no profile. A Calibration belongs
// to one agent's loop and is not safe for concurrent use.
type Calibration struct {
	profiles map[string]observation
}

type observation struct {
	estimated, reported uint64
}

// Observe records that a request of bytes bytes and items messages and
// tools, sent to profile, was reported as reported input tokens. A zero
// report (a provider that sent none) changes nothing.
func (c *Calibration) Observe(profile string, bytes uint64, items int, reported uint64) {
	if reported == 0 {
		return
	}
	if c.profiles == nil {
		c.profiles = map[string]observation{}
	}
	c.profiles[profile] = observation{estimated: EstimateTokens(bytes, items), reported: reported}
}

// Estimate is the calibrated token estimate of a request to profile: the
// reference's estimate, or that estimate scaled by the profile's last
// observed reported/estimated ratio when that is larger.
func (c *Calibration) Estimate(profile string, bytes uint64, items int) uint64 {
	est := EstimateTokens(bytes, items)
	o, ok := c.profiles[profile]
	if !ok || o.reported <= o.estimated {
		return est
	}
	// est × reported / estimated, rounded up, without overflow.
	hi, lo := bits.Mul64(est, o.reported)
	if hi >= o.estimated {
		return ^uint64(0)
	}
	q, r := bits.Div64(hi, lo, o.estimated)
	if r > 0 {
		q = satAdd(q, 1)
	}
	return max(q, est)
}

func satAdd(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return ^uint64(0)
	}
	return s
}

func satMul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return ^uint64(0)
	}
	return lo
}
