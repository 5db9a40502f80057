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
			OnEgress: func(d egress.Decision) { mu.Lock(); got = append(got, d); mu.Unlock() },
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
// shell.run: `true` in the default sandbox and under allowlist (the
// proxy's socket and the forwarder's start), and curl making one HTTPS
// request through the proxy to a loopback fixture, with the median of
// each as p50-ns.
func BenchmarkShellRunAllowlistHTTPS(b *testing.B) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "fixture") }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	allow := allowlistRunner(b, port, srv.Certificate().Raw)
	deny, err := New(Options{Workspace: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	curl := fmt.Sprintf("curl -sS --cacert ca.pem https://example.com:%d/", port)
	for _, c := range []struct {
		name    string
		r       *Runner
		command string
	}{{"deny/true", deny, "true"}, {"allowlist/true", allow, "true"}, {"allowlist/curl-https", allow, curl}} {
		b.Run(c.name, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				res, err := c.r.Run(context.Background(), Request{Command: c.command, Cwd: "."})
				if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
					b.Fatal(res, err)
				}
				took = append(took, time.Since(t0))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
		})
	}
}
