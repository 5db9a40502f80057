// Package redact removes known secret values from bytes before they are
// recorded anywhere: events, ledger, traces, errors.
package redact

import (
	"bytes"
	"strings"
	"sync"
)

// Mask replaces every redacted value.
const Mask = "[redacted]"

// minLen is the shortest value worth masking: masking one- or two-byte
// values would shred ordinary output without protecting anything.
const minLen = 4

// Set is a concurrency-safe set of secret values. The zero value is empty and
// ready to use.
type Set struct {
	mu     sync.RWMutex
	values []string
}

// Add registers a secret value. Short values are ignored. A value that is
// an authorization scheme and a token ("Bearer abc…", "Basic …") registers
// the token on its own too: a server that echoes the token alone must not
// get it past the mask.
func (s *Set) Add(v string) {
	for _, p := range Parts(v) {
		s.add(p)
	}
}

// Parts returns what masking v means masking: v itself and, when v is an
// authorization scheme and a token, the token alone. Values too short to
// mask are left out.
func Parts(v string) []string {
	var out []string
	if scheme, token, ok := strings.Cut(v, " "); ok && isScheme(scheme) && !strings.ContainsAny(token, " \t") && len(token) >= minLen {
		out = append(out, token)
	}
	if len(v) >= minLen {
		out = append(out, v)
	}
	return out
}

// isScheme reports whether w looks like an HTTP authorization scheme.
func isScheme(w string) bool {
	if len(w) == 0 || len(w) > 20 {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func (s *Set) add(v string) {
	if len(v) < minLen {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, have := range s.values {
		if have == v {
			return
		}
	}
	s.values = append(s.values, v)
}

// Len reports how many values are registered.
func (s *Set) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.values)
}

// Bytes returns b with every registered value replaced by Mask. It returns b
// itself when nothing matched, so the common case allocates nothing.
func (s *Set) Bytes(b []byte) []byte {
	if s == nil {
		return b
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, v := range s.values {
		if bytes.Contains(b, []byte(v)) {
			b = bytes.ReplaceAll(b, []byte(v), []byte(Mask))
		}
	}
	return b
}

// String is Bytes for strings.
func (s *Set) String(str string) string {
	if s == nil {
		return str
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, v := range s.values {
		if strings.Contains(str, v) {
			str = strings.ReplaceAll(str, v, Mask)
		}
	}
	return str
}
