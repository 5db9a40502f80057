package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

func TestParseAllowRefusesEntriesThatCannotBeEnforced(t *testing.T) {
	t.Parallel()
	for _, e := range []string{
		"", "https://api.example.com", "api.example.com/v1", "user@api.example.com", "*", "*.org",
		"api.*.example.com", "api.example.com:0", "api.example.com:70000", "api.example.com:", "127.1", "0x7f000001",
		"[api.example.com]:443", "[::1", "fe80::1%eth0", "-bad.example.com", "exa_mple.com",
	} {
		if _, err := ParseAllow([]string{e}); !errors.Is(err, ErrInvalidAllow) || !strings.Contains(err.Error(), fmt.Sprintf("%q", e)) {
			t.Errorf("ParseAllow(%q) = %v, want ErrInvalidAllow naming the entry", e, err)
		}
	}
}

func TestDecideAllowsOnlyListedHostsAndPorts(t *testing.T) {
	t.Parallel()
	p, err := New(Options{Allow: []string{"api.example.com", "*.pkg.example.org:443", "192.0.2.7:8443", "[2001:db8::1]:443"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host    string
		port    int
		allowed bool
		rule    string
	}{
		{"api.example.com", 443, true, "api.example.com"},
		{"API.Example.com.", 80, true, "api.example.com"},
		{"api.example.com", 8443, false, ""}, // no port: 80 and 443 only
		{"evil-api.example.com", 443, false, ""},
		{"api.example.com.evil.test", 443, false, ""},
		{"a.pkg.example.org", 443, true, "*.pkg.example.org:443"},
		{"a.b.pkg.example.org", 443, true, "*.pkg.example.org:443"},
		{"pkg.example.org", 443, false, ""}, // a wildcard is not its apex
		{"a.pkg.example.org", 80, false, ""},
		{"192.0.2.7", 8443, true, "192.0.2.7:8443"},
		{"192.0.2.7", 443, false, ""},
		{"192.0.2.8", 8443, false, ""}, // an IP literal only when listed
		{"::ffff:192.0.2.7", 8443, true, "192.0.2.7:8443"},
		{"2001:db8::1", 443, true, "[2001:db8::1]:443"},
		{"127.0.0.1", 443, false, ""},
		{"127.1", 443, false, ""}, // what a system resolver reads as an address
		{"api.example.com", 0, false, ""},
	} {
		d := p.Decide("CONNECT", c.host, c.port)
		if d.Allowed != c.allowed || d.Rule != c.rule || !d.Allowed && d.Reason == "" {
			t.Errorf("Decide(%s:%d) = %+v, want allowed %v rule %q and a reason when denied", c.host, c.port, d, c.allowed, c.rule)
		}
	}
}

type mapResolver map[string]string

func (r mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, errors.New("no such host")
}

// TestProxyCarriesAllowedRequestsAndRecordsEveryDecision drives the proxy
// over TCP with raw CONNECT and plain-HTTP requests against a loopback
// fixture.
func TestProxyCarriesAllowedRequestsAndRecordsEveryDecision(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "fixture "+r.URL.Path)
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	var mu sync.Mutex
	var got []Decision
	proxy := serveProxy(t, Options{
		Allow:    []string{fmt.Sprintf("ok.test:%d", port)},
		Resolver: mapResolver{"ok.test": "127.0.0.1", "other.test": "127.0.0.1"},
		Record:   func(d Decision) error { mu.Lock(); got = append(got, d); mu.Unlock(); return nil },
	})

	exchange := func(req string) string {
		c, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, req)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(req, "CONNECT") {
			b, _ := io.ReadAll(resp.Body)
			return fmt.Sprintf("%d %s", resp.StatusCode, b)
		}
		// Through the tunnel: one request to the fixture.
		fmt.Fprintf(c, "GET /tunnel HTTP/1.1\r\nHost: ok.test\r\nConnection: close\r\n\r\n")
		inner, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(inner.Body)
		return fmt.Sprintf("tunnel %d %s", inner.StatusCode, b)
	}
	cases := []struct{ req, want string }{
		{fmt.Sprintf("CONNECT ok.test:%d HTTP/1.1\r\nHost: ok.test:%[1]d\r\n\r\n", port), "tunnel 200 fixture /tunnel"},
		{fmt.Sprintf("GET http://ok.test:%d/plain HTTP/1.1\r\nHost: ok.test:%[1]d\r\n\r\n", port), "200 fixture /plain"},
		{fmt.Sprintf("CONNECT other.test:%d HTTP/1.1\r\nHost: other.test\r\n\r\n", port), "403 egress: other.test:"},
		{fmt.Sprintf("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n", port), "403 egress: 127.0.0.1:"},
		{"CONNECT ok.test:1 HTTP/1.1\r\nHost: x\r\n\r\n", "403 egress: ok.test:1 denied"},
		{"GET /origin-form HTTP/1.1\r\nHost: ok.test\r\n\r\n", "400 "},
	}
	for _, c := range cases {
		if got := exchange(c.req); !strings.HasPrefix(got, c.want) {
			t.Errorf("%q: got %q, want prefix %q", c.req, got, c.want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(cases) {
		t.Fatalf("%d decisions recorded, want %d: %+v", len(got), len(cases), got)
	}
	for i, want := range []bool{true, true, false, false, false, false} {
		if got[i].Allowed != want || want && got[i].Rule == "" || !want && got[i].Reason == "" {
			t.Errorf("decision %d = %+v, want allowed %v with its rule or reason", i, got[i], want)
		}
	}
}

// TestProxyRefusesWhatItCannotRecord: an allowed request whose decision
// the recorder refuses is answered 403 and never reaches the fixture: no
// egress leaves unrecorded.
func TestProxyRefusesWhatItCannotRecord(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		io.WriteString(w, "fixture")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	proxy := serveProxy(t, Options{
		Allow:    []string{fmt.Sprintf("ok.test:%d", port)},
		Resolver: mapResolver{"ok.test": "127.0.0.1"},
		Record:   func(Decision) error { return errors.New("the ledger is closed") },
	})
	for _, req := range []string{
		fmt.Sprintf("GET http://ok.test:%d/plain HTTP/1.1\r\nHost: ok.test\r\n\r\n", port),
		fmt.Sprintf("CONNECT ok.test:%d HTTP/1.1\r\nHost: ok.test\r\n\r\n", port),
	} {
		c, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		c.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "could not be recorded") {
			t.Errorf("%q: %d %s, want 403 saying the decision could not be recorded", req, resp.StatusCode, b)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if hits != 0 {
		t.Errorf("the fixture was reached %d times", hits)
	}
}

// serveProxy serves a proxy of opts on a loopback listener until the test
// ends, and returns the listener's address.
func serveProxy(t *testing.T, opts Options) string {
	t.Helper()
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}
