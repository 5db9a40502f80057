package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ErrInvalidAllow is the kind of an allow entry that cannot be used.
var ErrInvalidAllow = errors.New("egress: invalid allow entry")

// Rule is one parsed allow entry.
type Rule struct {
	// Entry is the entry as written: what a decision names as its rule.
	Entry string
	// Host is the lower-case name (the suffix after "*." for a wildcard),
	// or the IP literal.
	Host string
	// Wildcard matches every name below Host, never Host itself.
	Wildcard bool
	// IP is set when Host is an IP literal.
	IP netip.Addr
	// Port is the one port allowed; 0 allows 80 and 443.
	Port int
}

// ParseAllow parses allow entries: "api.example.com" (ports 80 and 443),
// "api.example.com:8443", "*.pkg.example.org:443" (every name below
// pkg.example.org, not pkg.example.org itself), "192.0.2.7:443" or
// "[2001:db8::1]:443" (an IP literal, which only an entry naming it
// allows). A bad entry is an error wrapping ErrInvalidAllow that names it.
func ParseAllow(entries []string) ([]Rule, error) {
	rules := make([]Rule, 0, len(entries))
	for _, e := range entries {
		r, err := parseRule(e)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %s", ErrInvalidAllow, e, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func parseRule(e string) (Rule, error) {
	r := Rule{Entry: e}
	if e == "" || strings.ContainsAny(e, "/@?# \t") {
		return r, errors.New(`want a host with an optional port, such as "api.example.com" or "*.example.org:443" (no scheme, path or user)`)
	}
	host, port := e, ""
	if strings.HasPrefix(e, "[") {
		end := strings.IndexByte(e, ']')
		if end < 0 {
			return r, errors.New("an IPv6 literal needs its closing ]")
		}
		host, port = e[1:end], strings.TrimPrefix(e[end+1:], ":")
		if e[end+1:] != "" && !strings.HasPrefix(e[end+1:], ":") {
			return r, errors.New("after ] only :port may follow")
		}
	} else if i := strings.LastIndexByte(e, ':'); i >= 0 {
		host, port = e[:i], e[i+1:]
	}
	if port != "" || strings.HasSuffix(e, ":") {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return r, errors.New("the port must be a number from 1 to 65535")
		}
		r.Port = n
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return r, errors.New("an IP literal may not name a zone")
		}
		r.Host, r.IP = a.String(), a.Unmap()
		return r, nil
	}
	if strings.HasPrefix(e, "[") {
		return r, errors.New("[...] must hold an IPv6 literal")
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.Wildcard, host = true, rest
	}
	name, ok := hostName(host)
	if !ok {
		return r, errors.New(`the host must be a DNS name (letters, digits, hyphens; "*." only as its first label) or an IP literal`)
	}
	if r.Wildcard && !strings.Contains(name, ".") {
		return r, errors.New(`a wildcard must keep at least two labels ("*.example.org", not "*.org")`)
	}
	r.Host = name
	return r, nil
}

// hostName returns host lower-cased without a trailing dot when it is a
// DNS name: labels of letters, digits and inner hyphens, the last one not
// starting with a digit. That last rule refuses what a system resolver
// would read as an address ("127.1", "0x7f000001"), so no name slips an
// IP literal past the rules.
func hostName(host string) (string, bool) {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "" || len(h) > 253 {
		return "", false
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "", false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", false
			}
		}
	}
	if last := labels[len(labels)-1]; last[0] >= '0' && last[0] <= '9' {
		return "", false
	}
	return h, true
}

// matches reports whether r allows host:port; host is a normalized name,
// or ip is valid for an IP literal.
func (r Rule) matches(host string, ip netip.Addr, port int) bool {
	if r.Port == 0 && port != 80 && port != 443 || r.Port != 0 && r.Port != port {
		return false
	}
	if ip.IsValid() {
		return r.IP.IsValid() && r.IP == ip.Unmap()
	}
	if r.IP.IsValid() {
		return false
	}
	if r.Wildcard {
		return strings.HasSuffix(host, "."+r.Host)
	}
	return host == r.Host
}

// AllowsEntry reports whether every host and port the allow entry e
// names is one p allows: e's host (a name, or an IP literal) on its port,
// or on 80 and 443 when it names none. A wildcard entry is never wholly
// allowed by another list.
func (p *Proxy) AllowsEntry(e string) bool {
	r, err := parseRule(e)
	if err != nil || r.Wildcard {
		return false
	}
	host := r.Host
	ports := []int{r.Port}
	if r.Port == 0 {
		ports = []int{80, 443}
	}
	for _, port := range ports {
		if !p.Decide("CONNECT", host, port).Allowed {
			return false
		}
	}
	return true
}
