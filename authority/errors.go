package authority

import "errors"

// Sentinel kinds, usable with errors.Is.
var (
	// ErrDenied: a layer denied a capability.
	ErrDenied = errors.New("authority: denied")
	// ErrWiden: a narrowing asked for something its parent does not have.
	ErrWiden = errors.New("authority: narrowing cannot add authority")
	// ErrCredential: a credential could not be resolved for its consumer
	// and destination.
	ErrCredential = errors.New("authority: credential unavailable")
	// ErrContract: a tool call broke its contract (see the Contract* kinds).
	ErrContract = errors.New("authority: contract violated")
)
