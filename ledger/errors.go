package ledger

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/pabloagent/pablo/ledger/outcome"
)

// Sentinel kinds. Every error the ledger returns matches one of them with
// errors.Is; the concrete types below carry the details for errors.As.
var (
	// ErrLimit: a ceiling would be exceeded; the action was not admitted.
	ErrLimit = errors.New("ledger: limit exceeded")
	// ErrDeadline: the agent's or the root's deadline has passed.
	ErrDeadline = errors.New("ledger: deadline passed")
	// ErrNoBound: a finite token or cost ceiling is set but the call carries no
	// attested per-call bound, so it cannot be admitted safely.
	ErrNoBound = errors.New("ledger: hard ceiling needs an attested per-call bound")
	// ErrBoundViolated: a settled actual exceeded the call's attested bound
	// (failure code accounting_bound_violated). The actual is still charged.
	ErrBoundViolated = errors.New("ledger: accounting bound violated")
	// ErrState: an operation does not fit the current state (unknown agent or
	// call, dispatch of a settled call, finishing with open work, ...).
	ErrState = errors.New("ledger: invalid state")
	// ErrAlreadySettled: a call was settled twice. The second settlement is
	// rejected and charges nothing. Also matches ErrState.
	ErrAlreadySettled = errors.New("ledger: call already settled")
	// ErrNotFound: no task, agent, call or result with that ID.
	ErrNotFound = errors.New("ledger: not found")
	// ErrInvalid: an argument or option is malformed.
	ErrInvalid = errors.New("ledger: invalid argument")
	// ErrStore: the store failed to make a record durable. The root stops
	// accepting work after the first such failure.
	ErrStore = errors.New("ledger: store failed")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("ledger: store closed")
	// ErrReadOnly: the store was opened to read only.
	ErrReadOnly = errors.New("ledger: store opened read-only")
	// ErrLocked: a bolt store's file is locked by another process, which
	// owns every task of it (the file lock is a bolt store's lease): its
	// tasks are live there. Also matches ErrStore.
	ErrLocked = errors.New("ledger: store locked by another process")
)

// LimitError reports the ceiling that refused an admission.
type LimitError struct {
	Kind      outcome.LimitKind // which ceiling
	AgentID   string            // the agent whose ceiling refused (the agent itself or an ancestor)
	Limit     uint64            // the ceiling's value
	Used      uint64            // charged plus reserved before this request
	Requested uint64            // what this request needed
	// NoBound is set when a finite token or cost ceiling met a call without an
	// attested per-call bound; Used and Requested are then zero.
	NoBound bool
}

func (e *LimitError) Error() string {
	switch {
	case e.NoBound:
		return fmt.Sprintf("ledger: %s ceiling of agent %s is %d, so every model call needs an attested per-call bound; set the route's max call %s or make the ceiling unlimited",
			e.Kind, e.AgentID, e.Limit, boundName(e.Kind))
	case e.Kind == outcome.LimitDuration:
		return fmt.Sprintf("ledger: deadline of agent %s (%d ms) has passed", e.AgentID, e.Limit)
	}
	return fmt.Sprintf("ledger: %s limit of agent %s is %d; %d used or reserved, %d more requested",
		e.Kind, e.AgentID, e.Limit, e.Used, e.Requested)
}

func boundName(k outcome.LimitKind) string {
	if k == outcome.LimitCost {
		return "cost (max_call_cost_microusd)"
	}
	return "tokens (max_call_tokens)"
}

// Is matches ErrLimit, and ErrDeadline or ErrNoBound where they apply.
func (e *LimitError) Is(target error) bool {
	switch target {
	case ErrLimit:
		return true
	case ErrDeadline:
		return e.Kind == outcome.LimitDuration
	case ErrNoBound:
		return e.NoBound
	}
	return false
}

// BoundError reports a settlement whose actual exceeded the attested bound.
type BoundError struct {
	CallID string
	Kind   outcome.LimitKind // LimitTotalTokens or LimitCost
	Bound  uint64
	Actual uint64
}

func (e *BoundError) Error() string {
	return fmt.Sprintf("ledger: model call %s reported %s %d above its attested bound %d (accounting_bound_violated); the actual was charged, fix the adapter's bound",
		e.CallID, e.Kind, e.Actual, e.Bound)
}

// Is matches ErrBoundViolated.
func (e *BoundError) Is(target error) bool { return target == ErrBoundViolated }

// StateError reports an operation that does not fit the current state.
type StateError struct {
	What   string // "agent", "call", "root"
	ID     string
	Op     string // the attempted operation, e.g. "dispatch"
	State  string // the current state, when known
	Reason string
}

func (e *StateError) Error() string {
	s := "ledger: cannot " + e.Op + " " + e.What + " " + strconv.Quote(e.ID)
	if e.State != "" {
		s += " in state " + e.State
	}
	return s + ": " + e.Reason
}

// Is matches ErrState, and ErrNotFound or ErrAlreadySettled where they apply.
func (e *StateError) Is(target error) bool {
	switch target {
	case ErrState:
		return true
	case ErrNotFound:
		return e.State == "" && e.Reason == reasonUnknown
	case ErrAlreadySettled:
		return e.State == string(CallSettled) && e.Op == "settle"
	}
	return false
}

const reasonUnknown = "no such ID in this ledger"

// InvalidError reports a malformed argument or option.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return "ledger: " + e.Field + ": " + e.Reason }

// Is matches ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// StoreError wraps a failure of the underlying [Store].
type StoreError struct {
	Op  string
	Err error
}

func (e *StoreError) Error() string { return "ledger: store " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the store's error.
func (e *StoreError) Unwrap() error { return e.Err }

// Is matches ErrStore.
func (e *StoreError) Is(target error) bool { return target == ErrStore }
