// Package endpoint holds the one rule every remote endpoint of Pablo obeys:
// HTTPS, except plain HTTP to this host's loopback interface where the
// caller allows it. Providers, MCP, A2A and OTLP all ask it, so the
// loopback allowance means the same thing everywhere.
package endpoint

import (
	"errors"
	"net"
	"net/url"
)

// ErrPlainHTTP is the kind of every refusal of a plain-HTTP endpoint.
var ErrPlainHTTP = errors.New("remote endpoints require https")

// IsLoopback reports whether u names this host's loopback interface:
// "localhost" or a literal loopback IP (127.0.0.0/8, ::1). Traffic to it
// never leaves the host.
func IsLoopback(u *url.URL) bool {
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// CheckScheme admits https, and http only when allowLoopback is set and u
// names a loopback host. A refusal wraps ErrPlainHTTP.
func CheckScheme(u *url.URL, allowLoopback bool) error {
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && allowLoopback && IsLoopback(u):
		return nil
	}
	return ErrPlainHTTP
}
