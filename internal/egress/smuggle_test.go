package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestProxyCarriesOnlyWhatItDecided defends the rule that the host and
// port the proxy decides on are the only destination a request reaches,
// and that the decision it records spells the host as the request did:
// a Host header naming another virtual host is replaced; IPv6 and
// IPv4-mapped literals no entry names are refused; case, a trailing dot,
// percent-encoding and a zero-padded port reach the allowed host only;
// a secret spelled in a denied host name is recorded as spelled, so the
// recorder's masking finds it.
func TestProxyCarriesOnlyWhatItDecided(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var hosts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts = append(hosts, r.Host)
		mu.Unlock()
		io.WriteString(w, "fixture")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	var got []Decision
	proxy := serveProxy(t, Options{
		Allow:    []string{fmt.Sprintf("ok.test:%d", port)},
		Resolver: mapResolver{"ok.test": "127.0.0.1"},
		Record: func(d Decision) error {
			mu.Lock()
			got = append(got, d)
			mu.Unlock()
			return nil
		},
	})
	exchange := func(req string) string {
		c, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return "closed: " + err.Error() // a request it cannot read
		}
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	const secret = "AKIAQ7EXAMPLESECRETx"
	cases := []struct{ name, req, want string }{
		{"a Host header naming another virtual host", fmt.Sprintf("GET http://ok.test:%d/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", port), "200 fixture"},
		{"upper case and a trailing dot", fmt.Sprintf("GET http://OK.Test.:%d/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", port), "200 fixture"},
		{"a percent-encoded host", fmt.Sprintf("GET http://ok%%2etest:%d/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", port), ""},
		{"a zero-padded port", fmt.Sprintf("GET http://ok.test:0%d/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", port), "200 fixture"},
		{"an IPv6 loopback", fmt.Sprintf("CONNECT [::1]:%d HTTP/1.1\r\nHost: ok.test\r\n\r\n", port), "403 "},
		{"an IPv4-mapped loopback", fmt.Sprintf("CONNECT [::ffff:127.0.0.1]:%d HTTP/1.1\r\nHost: ok.test\r\n\r\n", port), "403 "},
		{"a zoned IPv6 literal", fmt.Sprintf("CONNECT [fe80::1%%25lo]:%d HTTP/1.1\r\nHost: ok.test\r\n\r\n", port), ""},
		{"a port of zero", "CONNECT ok.test:0 HTTP/1.1\r\nHost: ok.test\r\n\r\n", "403 "},
		{"a secret in a denied host", "CONNECT " + secret + ".evil.test:443 HTTP/1.1\r\nHost: ok.test\r\n\r\n", "403 "},
	}
	for _, c := range cases {
		mu.Lock()
		hosts = nil
		mu.Unlock()
		out := exchange(c.req)
		mu.Lock()
		seen := hosts
		mu.Unlock()
		t.Logf("%s: %s", c.name, out)
		if c.want != "" && !strings.HasPrefix(out, c.want) {
			t.Errorf("%s: got %q, want prefix %q", c.name, out, c.want)
		}
		if !strings.HasPrefix(out, "200 ") && len(seen) != 0 {
			t.Errorf("%s: refused (%q) but the fixture was reached", c.name, out)
		}
		for _, h := range seen {
			if !strings.EqualFold(strings.Replace(h, ".:", ":", 1), fmt.Sprintf("ok.test:%d", port)) {
				t.Errorf("%s: the fixture saw Host %q, not the host decided", c.name, h)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, d := range got {
		found = found || strings.Contains(d.Host, secret)
		if d.Allowed && d.Port != port {
			t.Errorf("allowed %+v on another port", d)
		}
	}
	if !found {
		t.Errorf("no decision spells the denied host as asked, so masking cannot find its secret: %+v", got)
	}
}
