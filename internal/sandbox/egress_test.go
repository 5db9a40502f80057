package sandbox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/egress"
	"github.com/pabloagent/pablo/internal/proc"
)

func TestMain(m *testing.M) {
	egress.ForwarderMain()
	os.Exit(m.Run())
}

// fixtureResolver resolves the test's names to loopback: no test traffic
// leaves the host.
type fixtureResolver map[string]string

func (r fixtureResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// egressFixture is a running proxy on a Unix socket, with its recorded
// decisions.
type egressFixture struct {
	socket string
	mu     sync.Mutex
	got    []egress.Decision
}

func (f *egressFixture) decisions() []egress.Decision {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

func startEgress(t *testing.T, allow []string, r egress.Resolver) *egressFixture {
	t.Helper()
	dir, err := os.MkdirTemp("", "egress")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &egressFixture{socket: filepath.Join(dir, "proxy.sock")}
	p, err := egress.New(egress.Options{Allow: allow, Resolver: r, Record: func(d egress.Decision) error {
		f.mu.Lock()
		f.got = append(f.got, d)
		f.mu.Unlock()
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", f.socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

// TestSandboxAllowlistReachesOnlyAllowedHostsThroughTheProxy runs the
// probes of TestHelperEgressProbe in the real sandbox under network
// allowlist: the allowed HTTPS and HTTP hosts answer through the proxy; a
// denied host, an IP literal, another port, a direct connection, UDP, DNS,
// a raw socket and a host's abstract Unix socket each fail; the proxy recorded each request it saw.
func TestSandboxAllowlistReachesOnlyAllowedHostsThroughTheProxy(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	fixture := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "fixture") })
	tlsSrv := httptest.NewTLSServer(fixture)
	defer tlsSrv.Close()
	plainSrv := httptest.NewServer(fixture)
	defer plainSrv.Close()
	tlsPort, plainPort := tlsSrv.Listener.Addr().(*net.TCPAddr).Port, plainSrv.Listener.Addr().(*net.TCPAddr).Port
	allow := []string{fmt.Sprintf("allowed.test:%d", tlsPort), fmt.Sprintf("*.plain.localhost:%d", plainPort)}
	f := startEgress(t, allow,
		fixtureResolver{"allowed.test": "127.0.0.1", "www.plain.localhost": "127.0.0.1", "denied.test": "127.0.0.1"})

	// A host service on an abstract Unix socket: those belong to a
	// network namespace, so the sandbox's own has none of the host's.
	abstract := fmt.Sprintf("@pablo-egress-test-%d-%d", os.Getpid(), tlsPort)
	aln, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer aln.Close()

	ws := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(ws, "ca.pem"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := Profile{Network: Allowlist, Allow: allow, ReadPaths: []string{filepath.Dir(exe)}}
	c, err := l.Command(p, Spec{
		Path: exe, Args: []string{exe, "-test.run=^TestHelperEgressProbe$"}, Workspace: ws,
		Env:    []string{"PATH=/usr/bin:/bin", "PABLO_EGRESS_PROBE=" + fmt.Sprint(tlsPort, " ", plainPort, " ", abstract), "HTTPS_PROXY=http://elsewhere.invalid:1"},
		Egress: &Egress{Socket: f.socket, Forwarder: exe},
	})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := c.Start(context.Background(), proc.Options{MaxStdout: 1 << 16, MaxStderr: 1 << 16})
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	res, err := pr.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(res.Stderr); err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout)
	t.Logf("probe output:\n%s", out)
	want := []string{
		"allowed-https: reached fixture",
		"allowed-http: reached fixture",
		"denied-host: failed",
		"ip-literal: failed",
		"other-port: failed",
		"direct-loopback: failed",
		"direct-tcp: failed",
		"udp: failed",
		"dns: failed",
		"raw-socket: failed",
		"abstract-socket: failed",
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("probe output lacks %q\nstdout:\n%s\nstderr:\n%s", w, out, res.Stderr)
		}
	}
	type key struct {
		host    string
		port    int
		allowed bool
		rule    string
	}
	var got []key
	for _, d := range f.decisions() {
		got = append(got, key{d.Host, d.Port, d.Allowed, d.Rule})
	}
	for _, k := range []key{
		{"allowed.test", tlsPort, true, fmt.Sprintf("allowed.test:%d", tlsPort)},
		{"www.plain.localhost", plainPort, true, fmt.Sprintf("*.plain.localhost:%d", plainPort)},
		{"denied.test", tlsPort, false, ""},
		{"127.0.0.1", tlsPort, false, ""},
		{"allowed.test", plainPort, false, ""},
	} {
		if !slices.Contains(got, k) {
			t.Errorf("no decision %+v among %+v", k, got)
		}
	}
}

// TestHelperEgressProbe is the client TestSandboxAllowlist... runs inside
// the sandbox; it does nothing elsewhere.
func TestHelperEgressProbe(t *testing.T) {
	spec := os.Getenv("PABLO_EGRESS_PROBE")
	if spec == "" {
		t.Skip("runs inside the sandbox only")
	}
	var tlsPort, plainPort int
	var abstract string
	fmt.Sscan(spec, &tlsPort, &plainPort, &abstract)
	pool := x509.NewCertPool()
	ca, _ := os.ReadFile("ca.pem")
	pool.AppendCertsFromPEM(ca)
	proxy, err := url.Parse(os.Getenv("HTTPS_PROXY"))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(proxy),
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "example.com"},
	}}
	get := func(name, u string) {
		resp, err := client.Get(u)
		if err == nil {
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode == http.StatusOK {
				fmt.Printf("%s: reached %s\n", name, b)
				return
			}
			err = errors.New(resp.Status)
		}
		fmt.Printf("%s: failed: %v\n", name, err)
	}
	get("allowed-https", fmt.Sprintf("https://allowed.test:%d/", tlsPort))
	get("allowed-http", fmt.Sprintf("http://www.plain.localhost:%d/", plainPort))
	get("denied-host", fmt.Sprintf("https://denied.test:%d/", tlsPort))
	get("ip-literal", fmt.Sprintf("https://127.0.0.1:%d/", tlsPort))
	get("other-port", fmt.Sprintf("https://allowed.test:%d/", plainPort))
	result := func(name string, err error) {
		if err != nil {
			fmt.Printf("%s: failed: %v\n", name, err)
		} else {
			fmt.Printf("%s: succeeded\n", name)
		}
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	_, err = d.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", tlsPort))
	result("direct-loopback", err)
	_, err = d.Dial("tcp", "192.0.2.1:443")
	result("direct-tcp", err)
	u, err := d.Dial("udp", "192.0.2.1:53")
	if err == nil {
		_, err = u.Write([]byte("x"))
	}
	result("udp", err)
	_, err = net.DefaultResolver.LookupHost(context.Background(), "allowed.test")
	result("dns", err)
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
	if err == nil {
		syscall.Close(fd)
	}
	result("raw-socket", err)
	_, err = d.Dial("unix", abstract)
	result("abstract-socket", err)
}
