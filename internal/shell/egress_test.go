//go:build linux

package shell

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/egress"
	"github.com/pabloagent/pablo/internal/sandbox"
)

func TestMain(m *testing.M) {
	egress.ForwarderMain()
	os.Exit(m.Run())
}

// loopbackNames resolves every name to 127.0.0.1: no test traffic leaves
// the host.
type loopbackNames struct{}

func (loopbackNames) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// allowlistRunner is a runner under network allowlist for the HTTPS
// fixture's port at example.com (the name its certificate holds), with the fixture's certificate in its workspace as
// ca.pem.
func allowlistRunner(t testing.TB, port int, cert []byte) *Runner {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert}), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Options{Workspace: ws, EgressForwarder: exe, EgressResolver: loopbackNames{},
		Sandbox: sandbox.Profile{Network: sandbox.Allowlist, Allow: []string{fmt.Sprintf("example.com:%d", port)}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SandboxReady(context.Background()); err != nil {
		t.Fatalf("bubblewrap is needed: %v", err)
	}
	return r
}

// TestShellRunUnderAllowlistReachesOnlyTheAllowedHost runs curl, a real
// client that honours HTTPS_PROXY, through shell.run: the allowed host
// answers, a denied one does not, and each call's decisions reach its
// OnEgress. The allowed name is example.com because the fixture's
// certificate names it; the proxy resolves it to loopback (loopbackNames).
func TestShellRunUnderAllowlistReachesOnlyTheAllowedHost(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("needs /usr/bin/curl")
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "fixture") }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	r := allowlistRunner(t, port, srv.Certificate().Raw)
	for _, c := range []struct {
		host    string
		reached bool
	}{{"example.com", true}, {"denied.test", false}} {
		var mu sync.Mutex
		var got []egress.Decision
		res, err := r.Run(context.Background(), Request{
			Command: fmt.Sprintf("curl -sS --max-time 10 --cacert ca.pem https://%s:%d/", c.host, port), Cwd: ".",
			OnEgress: func(d egress.Decision) error { mu.Lock(); got = append(got, d); mu.Unlock(); return nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		if reached := res.Stdout == "fixture"; reached != c.reached {
			t.Errorf("%s: stdout %q stderr %q, want reached %v", c.host, res.Stdout, res.Stderr, c.reached)
		}
		mu.Lock()
		if len(got) != 1 || got[0].Host != c.host || got[0].Port != port || got[0].Allowed != c.reached {
			t.Errorf("%s: decisions %+v, want one for %s:%d allowed %v", c.host, got, c.host, port, c.reached)
		}
		mu.Unlock()
	}
}

func TestAllowlistWithoutAForwarderFailsEachCommand(t *testing.T) {
	t.Parallel()
	r, err := New(Options{Workspace: t.TempDir(), Sandbox: sandbox.Profile{Network: sandbox.Allowlist, Allow: []string{"a.example.com"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Run(context.Background(), Request{Command: "true", Cwd: "."})
	if !errors.Is(err, ErrSandbox) || !strings.Contains(err.Error(), "ForwarderMain") {
		t.Fatalf("err %v, want ErrSandbox naming egress.ForwarderMain", err)
	}
}

// BenchmarkShellRunAllowlistHTTPS is the cost of network allowlist per
// shell.run, the four calls alternating in one loop (their order
// rotating) so the host's load falls on all alike: `true` in the default
// sandbox (deny) and under allowlist (the proxy's socket and the
// forwarder's start), and curl making one HTTPS request to a loopback
// fixture under network allow (directly: --resolve names the fixture, so
// no name leaves the host) and under allowlist (through the proxy). It
// reports each call's median and the proxy's overhead per shell.run with
// one HTTPS request, proxy-added-ns: the allowlist curl's median less the
// allow curl's.
func BenchmarkShellRunAllowlistHTTPS(b *testing.B) {
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		b.Skip("needs /usr/bin/curl")
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "fixture") }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	allowlist := allowlistRunner(b, port, srv.Certificate().Raw)
	deny, err := New(Options{Workspace: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	open, err := New(Options{Workspace: allowlist.workspace, Sandbox: sandbox.Profile{Network: sandbox.Allow}})
	if err != nil {
		b.Fatal(err)
	}
	curl := fmt.Sprintf("curl -sS --cacert ca.pem https://example.com:%d/", port)
	direct := fmt.Sprintf("curl -sS --cacert ca.pem --resolve example.com:%d:127.0.0.1 https://example.com:%[1]d/", port)
	cases := []struct {
		name    string
		r       *Runner
		command string
		took    []time.Duration
	}{{name: "deny/true", r: deny, command: "true"}, {name: "allowlist/true", r: allowlist, command: "true"},
		{name: "allow/curl-https", r: open, command: direct}, {name: "allowlist/curl-https", r: allowlist, command: curl}}
	for i := 0; b.Loop(); i++ {
		for j := range cases {
			c := &cases[(i+j)%len(cases)]
			t0 := time.Now()
			res, err := c.r.Run(context.Background(), Request{Command: c.command, Cwd: "."})
			if err != nil || res.ExitCode == nil || *res.ExitCode != 0 || c.command != "true" && res.Stdout != "fixture" {
				b.Fatal(c.name, res, err)
			}
			c.took = append(c.took, time.Since(t0))
		}
	}
	med := map[string]float64{}
	for _, c := range cases {
		slices.Sort(c.took)
		med[c.name] = float64(c.took[len(c.took)/2].Nanoseconds())
		b.ReportMetric(med[c.name], c.name+"-p50-ns")
	}
	b.ReportMetric(med["allowlist/curl-https"]-med["allow/curl-https"], "proxy-added-ns")
}
