// Package jitter spreads periodic work so that many objects created together do not all
// come due together.
package jitter

import (
	"math/rand/v2"
	"time"
)

// Fraction is how far, either way, Spread moves an interval: ±15%.
const Fraction = 0.15

// Spread returns d moved by up to ±Fraction, uniformly; 0 or less is returned unchanged.
func Spread(d time.Duration) time.Duration {
	return spread(d, rand.Float64()) //nolint:gosec // timing jitter, not security
}

// spread maps u in [0, 1) onto [d-Fraction·d, d+Fraction·d).
func spread(d time.Duration, u float64) time.Duration {
	if d <= 0 {
		return d
	}
	return d + time.Duration((2*u-1)*Fraction*float64(d))
}
