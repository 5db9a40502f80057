package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// rawGet sends one GET of path to addr, written by hand so that its Host
// header is exactly host, and returns the status code and body.
func rawGet(t *testing.T, addr, path, host string) (int, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestInspectorRefusesRebindingHostsOnEveryPage defends the DNS rebinding
// rule on every request, not only the probe: a page a rebound name
// served (the attacker's name resolving to the listener) is of that
// name's origin and could read what it loads. Exposed, a request is
// answered when it is addressed to an IP address, localhost or a name the
// operator allowed; on loopback, to a loopback address, localhost or such
// a name. Anything else is 421 saying why, on every page and the probe.
func TestInspectorRefusesRebindingHostsOnEveryPage(t *testing.T) {
	t.Parallel()
	pages := []string{"/", "/stacks", "/tools", "/mcp", "/skills", "/why?stack=x&target=fs.read", "/style.css", "/tasks", "/nothing"}
	for _, exposed := range []bool{false, true} {
		in, err := newInspector(nil, nil, exposed)
		if err != nil {
			t.Fatal(err)
		}
		if err := in.allowHosts([]string{"Inspector.LAN"}); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(in)
		addr := strings.TrimPrefix(srv.URL, "http://")
		_, port, _ := net.SplitHostPort(addr)
		refused := []string{"attacker.example:" + port, "attacker.example", "localhost.attacker.example:" + port,
			"127.0.0.1.attacker.example:" + port, "inspector.lan.attacker.example:" + port, "xn--inspector-lan.example:" + port}
		answered := []string{addr, "localhost:" + port, "LOCALHOST:" + port, "localhost.:" + port, "[::1]:" + port, "inspector.lan:" + port, "INSPECTOR.lan.:" + port}
		if exposed {
			answered = append(answered, "10.1.2.3:"+port, "[2001:db8::1]:"+port, "192.0.2.7")
		} else {
			refused = append(refused, "10.1.2.3:"+port, "[2001:db8::1]:"+port)
		}
		for _, page := range pages {
			for _, host := range refused {
				code, body := rawGet(t, addr, page, host)
				if code != http.StatusMisdirectedRequest || !strings.Contains(body, "DNS rebinding") || !strings.Contains(body, "--allow-host") {
					t.Errorf("exposed %v, GET %s for Host %s: %d %q, want 421 saying why", exposed, page, host, code, body)
				}
			}
			for _, host := range answered {
				if code, body := rawGet(t, addr, page, host); code == http.StatusMisdirectedRequest {
					t.Errorf("exposed %v, GET %s for Host %s: refused %q, want it answered", exposed, page, host, body)
				}
			}
		}
		srv.Close()
	}
}

// TestInspectAnswersTheNamesItIsGiven: `pablo inspect` answers the names
// given with --allow-host on an exposed listener, and its addresses, and
// refuses any other name; an address or a name with a port is not a name
// to allow.
func TestInspectAnswersTheNamesItIsGiven(t *testing.T) {
	c := readinessCases(t)[0]
	for _, bad := range []string{"10.0.0.1", "[::1]", "inspector.lan:80", "http://inspector.lan", ""} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := inspectCommand(ctx, append(append([]string{}, c.args...), "--allow-host", bad), inspectHost(c.bubblewrap))
		cancel()
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--allow-host") {
			t.Errorf("--allow-host %q: %v, want a usage error naming the flag", bad, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	h := inspectHost(c.bubblewrap)
	h.stdout, h.stderr = pw, &errb
	done := make(chan error, 1)
	go func() {
		done <- inspectCommand(ctx, append(append([]string{}, c.args...), "--listen", "0.0.0.0:0", "--allow-host", "inspector.lan"), h)
	}()
	line := make([]byte, 256)
	n, _ := pr.Read(line)
	go io.Copy(io.Discard, pr)
	u := strings.TrimSpace(strings.TrimPrefix(string(line[:n]), "pablo inspect: serving http://"))
	_, port, err := net.SplitHostPort(strings.TrimSuffix(u, "/"))
	if err != nil {
		t.Fatalf("served %q: %v", line[:n], err)
	}
	addr := net.JoinHostPort("127.0.0.1", port)
	for host, want := range map[string]int{"inspector.lan:" + port: http.StatusOK, "127.0.0.1:" + port: http.StatusOK,
		"attacker.example:" + port: http.StatusMisdirectedRequest} {
		if code, body := rawGet(t, addr, "/", host); code != want {
			t.Errorf("GET / for Host %s: %d %q, want %d", host, code, body, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("inspect ended with %v", err)
	}
	pw.Close()
}
