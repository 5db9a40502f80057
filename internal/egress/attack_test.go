package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// listResolver resolves each name to its addresses.
type listResolver map[string][]string

func (r listResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, a := range r[host] {
		out = append(out, netip.MustParseAddr(a))
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

// TestProxyKeepsNamesOffTheHostsOwnAddresses defends the rule on what an
// allowed name resolves to: a name never reaches a link-local address
// (the cloud metadata service at 169.254.169.254), an unspecified or a
// multicast one, however its DNS answers; a name a wildcard admits (one
// whoever asks may choose, and whose DNS another may run) never reaches
// the host's loopback, where the proxy itself runs, unless it lies under
// .localhost; an exact name, or an IP literal an entry names, does.
func TestProxyKeepsNamesOffTheHostsOwnAddresses(t *testing.T) {
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
	var got []Decision
	proxy := serveProxy(t, Options{
		Allow: []string{fmt.Sprintf("exact.test:%d", port), fmt.Sprintf("*.wild.test:%d", port),
			fmt.Sprintf("*.dev.localhost:%d", port), fmt.Sprintf("meta.test:%d", port), fmt.Sprintf("zero.test:%d", port),
			fmt.Sprintf("mixed.test:%d", port)},
		Resolver: listResolver{
			"exact.test":       {"127.0.0.1"},
			"rebind.wild.test": {"127.0.0.1"},
			"mapped.wild.test": {"::ffff:127.0.0.1"},
			"v6.wild.test":     {"::1"},
			"a.dev.localhost":  {"127.0.0.1"},
			"meta.test":        {"169.254.169.254"},
			"zero.test":        {"0.0.0.0"},
			"mixed.test":       {"169.254.169.254", "127.0.0.1"},
		},
		Record: func(d Decision) error { mu.Lock(); got = append(got, d); mu.Unlock(); return nil },
	})
	for _, c := range []struct {
		host string
		want string
	}{
		{"exact.test", "200 "},
		{"rebind.wild.test", "403 "},
		{"mapped.wild.test", "403 "},
		{"v6.wild.test", "403 "},
		{"a.dev.localhost", "200 "},
		{"meta.test", "403 "},
		{"zero.test", "403 "},
		{"mixed.test", "200 "}, // the metadata address is skipped, loopback is the exact name's
	} {
		mu.Lock()
		hits, got = 0, nil
		mu.Unlock()
		out := proxyExchange(t, proxy, fmt.Sprintf("GET http://%s:%d/ HTTP/1.1\r\nHost: x\r\n\r\n", c.host, port))
		mu.Lock()
		h, ds := hits, got
		mu.Unlock()
		if !strings.HasPrefix(out, c.want) {
			t.Errorf("%s: %q, want %q", c.host, out, c.want)
		}
		if c.want == "403 " {
			if h != 0 {
				t.Errorf("%s: refused but the fixture was reached", c.host)
			}
			if len(ds) != 1 || ds[0].Allowed || ds[0].Rule != "" || !strings.Contains(ds[0].Reason, "resolves") {
				t.Errorf("%s: decisions %+v, want one denial saying what the name resolves to", c.host, ds)
			}
		}
	}
}

// TestProxyBoundsARequestsHead: a request head larger than the proxy
// reads, or one that never ends, closes the connection: a sandboxed
// command cannot grow the host's memory, or hold its goroutines, without
// bound.
func TestProxyBoundsARequestsHead(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []Decision
	o := Options{Allow: []string{"ok.test"}, Record: func(d Decision) error { mu.Lock(); got = append(got, d); mu.Unlock(); return nil }}
	o.headerTimeout = 50 * time.Millisecond
	proxy := serveProxy(t, o)

	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		w := bufio.NewWriter(c)
		w.WriteString("GET http://ok.test/ HTTP/1.1\r\nX: ")
		for range 4 * maxHeadBytes / 1024 {
			if _, err := w.WriteString(strings.Repeat("a", 1024)); err != nil {
				return
			}
		}
		w.Flush()
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil && resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("an oversized head: %d, want 431 or a closed connection", resp.StatusCode)
	}

	slow, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "GET http://ok.test/ HTTP/1.1\r\n")
	slow.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(slow); err != nil {
		t.Errorf("a head that never ends: %v, want the proxy to close the connection", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, d := range got {
		if d.Allowed {
			t.Errorf("an unfinished head was decided: %+v", d)
		}
	}
}

func proxyExchange(t *testing.T, proxy, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, req)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "closed: " + err.Error()
	}
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}

// TestProxyBoundsItsConnections: connections past the proxy's bound are
// answered 503 and closed at once, so a sandboxed command cannot spend
// the host's descriptors and goroutines without bound; once one closes,
// another is served.
func TestProxyBoundsItsConnections(t *testing.T) {
	t.Parallel()
	o := Options{Allow: []string{"ok.test"}}
	o.maxConns = 2
	proxy := serveProxy(t, o)
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET http://ok.test/ HTTP/1.1\r\n") // a head not yet ended
		held = append(held, c)
	}
	// The two held are being served once a third is refused; it may be
	// accepted before the second's goroutine has its slot, so retry.
	var out string
	for range 100 {
		if out = proxyExchange(t, proxy, "GET http://other.test/ HTTP/1.1\r\nHost: x\r\n\r\n"); strings.HasPrefix(out, "503 ") {
			break
		}
	}
	if !strings.HasPrefix(out, "503 ") {
		t.Fatalf("a connection past the bound: %q, want 503", out)
	}
	held[0].Close()
	for range 100 {
		if out = proxyExchange(t, proxy, "GET http://other.test/ HTTP/1.1\r\nHost: x\r\n\r\n"); strings.HasPrefix(out, "403 ") {
			return
		}
	}
	t.Errorf("after one closed: %q, want the request decided (403)", out)
}

// TestDecideRefusesAddressesSpelledAsNames: the spellings a system
// resolver or a URL parser reads as an address, or as another host, are
// never a name an entry allows; an IDNA name is allowed only in the
// ASCII form an entry writes.
func TestDecideRefusesAddressesSpelledAsNames(t *testing.T) {
	t.Parallel()
	p, err := New(Options{Allow: []string{"ok.test", "*.ok.test", "xn--mnchen-3ya.test"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"2130706433", "0x7f.1", "0177.0.0.1", "127.0.0.1.", "1.ok.test.2130706433", "user@ok.test",
		"ok.test%2e", "ok.test:443", "münchen.test", "ok.test\x00.evil.test", "*.ok.test", ".ok.test", "ok..test"} {
		if d := p.Decide("CONNECT", h, 443); d.Allowed {
			t.Errorf("Decide(%q) allowed by %s", h, d.Rule)
		}
	}
	for _, h := range []string{"OK.TEST", "a.ok.test.", "xn--mnchen-3ya.test"} {
		if d := p.Decide("CONNECT", h, 443); !d.Allowed {
			t.Errorf("Decide(%q) denied: %s", h, d.Reason)
		}
	}
}

// TestProxyCarriesOneRequestPerConnection: a request smuggled after the
// first one, by pipelining or by a Content-Length that disagrees with a
// chunked body, never reaches the upstream: the proxy writes the one
// request it decided, framed as it read it, and nothing after it.
func TestProxyCarriesOneRequestPerConnection(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths = append(paths, r.URL.Path+" "+string(b))
		mu.Unlock()
		io.WriteString(w, "fixture")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	proxy := serveProxy(t, Options{Allow: []string{fmt.Sprintf("ok.test:%d", port)}, Resolver: mapResolver{"ok.test": "127.0.0.1"}})
	for _, req := range []string{
		fmt.Sprintf("GET http://ok.test:%d/first HTTP/1.1\r\nHost: ok.test\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: ok.test\r\n\r\n", port),
		fmt.Sprintf("POST http://ok.test:%d/first HTTP/1.1\r\nHost: ok.test\r\nContent-Length: 60\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: ok.test\r\n\r\n", port),
	} {
		mu.Lock()
		paths = nil
		mu.Unlock()
		out := proxyExchange(t, proxy, req)
		mu.Lock()
		got := slices.Clone(paths)
		mu.Unlock()
		if !strings.HasPrefix(out, "200 ") && !strings.HasPrefix(out, "closed") && !strings.HasPrefix(out, "400 ") {
			t.Errorf("%q: %q", req, out)
		}
		for _, p := range got {
			if strings.Contains(p, "smuggled") || !strings.HasPrefix(p, "/first") {
				t.Errorf("%q: the upstream saw %q", req, got)
			}
		}
		if len(got) > 1 {
			t.Errorf("%q: the upstream saw %d requests: %q", req, len(got), got)
		}
	}
}
