package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestInspectorProbeRefusesEveryCrossSitePost defends the rule that only
// the inspector's own page starts a probe: a POST from another origin,
// from an opaque one ("null"), with another process's token, or to a
// host name a DNS rebinding took over (on a loopback listener and on an
// exposed one) is refused before the form is read. A probe of a stack that is
// not there is the request that got through (404), so nothing starts.
func TestInspectorProbeRefusesEveryCrossSitePost(t *testing.T) {
	t.Parallel()
	for _, exposed := range []bool{false, true} {
		in, err := newInspector(nil, nil, exposed)
		if err != nil {
			t.Fatal(err)
		}
		in.token = newProbeToken()
		srv := httptest.NewServer(in)
		host := strings.TrimPrefix(srv.URL, "http://")
		_, port, _ := strings.Cut(host, ":")
		post := func(hostHeader, origin, token string) int {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/probe", strings.NewReader(url.Values{"token": {token}, "stack": {"none"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Host = hostHeader
			if origin != "" {
				req.Header.Set("Origin", origin)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		rebound := "attacker.example:" + port
		for _, c := range []struct{ name, host, origin, token string }{
			{"another site's origin", host, "http://attacker.example", in.token},
			{"an opaque origin", host, "null", in.token},
			{"the same host on another port", host, "http://127.0.0.1:1", in.token},
			{"another process's token", host, "", newProbeToken()},
			{"no token", host, srv.URL, ""},
			{"a rebound name, its own origin", rebound, "http://" + rebound, in.token},
			{"a rebound name, no origin", rebound, "", in.token},
			{"a name ending in localhost", "localhost.attacker.example:" + port, "http://localhost.attacker.example:" + port, in.token},
		} {
			if code := post(c.host, c.origin, c.token); code != http.StatusForbidden && code != http.StatusMisdirectedRequest {
				t.Errorf("exposed %v, %s: answered %d, want 403 or 421", exposed, c.name, code)
			}
		}
		for _, ok := range []struct{ host, origin string }{{host, srv.URL}, {host, ""}, {"localhost:" + port, "http://localhost:" + port}} {
			if code := post(ok.host, ok.origin, in.token); code != http.StatusNotFound {
				t.Errorf("exposed %v, the inspector's own page at %s: answered %d, want 404 (no such stack)", exposed, ok.host, code)
			}
		}
		srv.Close()
	}
}
