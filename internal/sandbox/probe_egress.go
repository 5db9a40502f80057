package sandbox

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pabloagent/pablo/internal/egress"
	"github.com/pabloagent/pablo/internal/proc"
)

// EgressProbe is what [ProbeEgress] found: whether the allowed loopback
// fixture answered through the proxy, and the escapes it tried.
type EgressProbe struct {
	// Reached is true when the allowed fixture answered through the proxy.
	Reached bool
	// Detail says what the allowed request was, and what came back.
	Detail string
	// Canaries are the escapes tried: another port of the allowed name,
	// the allowed fixture by IP literal, a direct connection past the
	// proxy. Blocked is true when each failed.
	Canaries []Canary
}

// ProbeEgress is the egress canary of network allowlist: two loopback
// fixtures of this process, a proxy of its own that allows the first by
// the name "localhost" and its port, and, in a sandbox under that
// allowlist (forwarder is the binary that calls egress.ForwarderMain), a
// bash that asks the proxy for the allowed fixture, for the second
// fixture's port, for the first by IP literal, and connects past the
// proxy. Nothing leaves the host. The error is a setup failure.
func ProbeEgress(ctx context.Context, l *Launcher, forwarder string) (EgressProbe, error) {
	var out EgressProbe
	serve := func(body string) (int, func(), error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, nil, err
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) })}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); _ = srv.Serve(ln) }()
		return ln.Addr().(*net.TCPAddr).Port, func() { srv.Close(); wg.Wait() }, nil
	}
	allowed, stopA, err := serve("allowed")
	if err != nil {
		return out, err
	}
	defer stopA()
	other, stopB, err := serve("other")
	if err != nil {
		return out, err
	}
	defer stopB()
	allow := []string{fmt.Sprintf("localhost:%d", allowed)}
	socket, stop, err := egress.ServeUnix(ctx, egress.Options{Allow: allow})
	if err != nil {
		return out, err
	}
	defer stop()
	root, err := os.MkdirTemp("", "pablo-egress-probe-")
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(root)
	ws, err := filepath.EvalSymlinks(root)
	if err != nil {
		return out, err
	}
	script := fmt.Sprintf(`req() { if exec 3<>/dev/tcp/127.0.0.1/%[1]s; then printf 'GET %%s HTTP/1.0\r\n\r\n' "$2" >&3; IFS= read -r line <&3; echo "$1: $line"; exec 3<&-; else echo "$1: no proxy"; fi; }
req allowed http://localhost:%[2]d/
req other_port http://localhost:%[3]d/
req ip_literal http://127.0.0.1:%[2]d/
if (exec 3<>/dev/tcp/127.0.0.1/%[2]d) 2>/dev/null; then echo "direct: connected"; else echo "direct: refused"; fi
`, strings.TrimPrefix(egress.ListenAddr, "127.0.0.1:"), allowed, other)
	p := Profile{Network: Allowlist, Allow: allow, Filesystem: NoFS}
	runCtx, cancel := context.WithTimeout(ctx, probeAllowance)
	defer cancel()
	c, err := l.Command(p, Spec{Path: "/bin/bash", Args: []string{"/bin/bash", "-c", script}, Env: []string{"PATH=/usr/bin:/bin", "LANG=C"}, Workspace: ws, Dir: ws,
		Egress: &Egress{Socket: socket, Forwarder: forwarder}})
	if err != nil {
		return out, err
	}
	pr, err := c.Start(runCtx, proc.Options{MaxStdout: 1 << 16, MaxStderr: 1 << 16})
	if err != nil {
		c.Close()
		return out, err
	}
	res, waitErr := pr.Wait()
	if err := c.Finish(res.Stderr); err != nil {
		return out, err
	}
	if waitErr != nil {
		return out, waitErr
	}
	lines := map[string]string{}
	for _, l := range strings.Split(string(res.Stdout), "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok {
			lines[k] = strings.TrimSpace(v)
		}
	}
	status := func(k string) string {
		if v := lines[k]; v != "" {
			return v
		}
		return "no answer"
	}
	out.Reached = strings.Contains(lines["allowed"], " 200 ")
	out.Detail = fmt.Sprintf("GET http://localhost:%d/ through the proxy, allowed by %s: %s", allowed, allow[0], status("allowed"))
	refused := func(k string) bool { return strings.Contains(lines[k], " 403 ") }
	out.Canaries = []Canary{
		{Name: "egress_other_port", Blocked: refused("other_port"), Detail: fmt.Sprintf("GET http://localhost:%d/ (a port no entry names) through the proxy: %s", other, status("other_port"))},
		{Name: "egress_ip_literal", Blocked: refused("ip_literal"), Detail: fmt.Sprintf("GET http://127.0.0.1:%d/ (the allowed fixture by IP literal) through the proxy: %s", allowed, status("ip_literal"))},
		{Name: "egress_direct", Blocked: lines["direct"] == "refused", Detail: fmt.Sprintf("TCP to 127.0.0.1:%d past the proxy: %s", allowed, status("direct"))},
	}
	return out, nil
}
