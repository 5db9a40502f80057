package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/mcp"
)

// TestTokenFileIsTheOwnersOnly: the CLI keeps OAuth grants in a 0600 file
// in a 0700 directory under the user's configuration directory, and
// refuses a file others can read instead of sending its tokens.
func TestTokenFileIsTheOwnersOnly(t *testing.T) {
	t.Parallel()
	h := &host{configDir: t.TempDir()}
	s, err := h.tokenStore()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := mcp.TokenKey{Server: "records", Resource: "https://records.example.test/mcp"}
	if err := s.Save(ctx, key, mcp.Grant{AccessToken: "at", RefreshToken: "rt"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, mcp.TokenKey{Server: "other", Resource: "https://other.example.test/mcp"}, mcp.Grant{AccessToken: "other"}); err != nil {
		t.Fatal(err)
	}
	g, ok, err := s.Load(ctx, key)
	if err != nil || !ok || g.AccessToken != "at" || g.RefreshToken != "rt" {
		t.Fatalf("load: %v %v %v", g, ok, err)
	}
	if _, ok, _ := s.Load(ctx, mcp.TokenKey{Server: "records", Resource: "https://elsewhere.example.test/mcp"}); ok {
		t.Fatal("a grant was found for another URL")
	}
	for path, want := range map[string]os.FileMode{s.path: 0o600, filepath.Dir(s.path): 0o700} {
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != want {
			t.Fatalf("%s: mode %v (%v), want %v", path, info.Mode().Perm(), err, want)
		}
	}
	os.Chmod(s.path, 0o644)
	if _, _, err := s.Load(ctx, key); err == nil || !strings.Contains(err.Error(), "may have leaked") {
		t.Fatalf("a file others can read was used: %v", err)
	}
}

// TestLoopbackAuthorizerTakesTheRedirect: the CLI prints the
// authorization URL and takes the browser's redirect on a loopback
// listener; a redirect with another state is turned away.
func TestLoopbackAuthorizerTakesTheRedirect(t *testing.T) {
	t.Parallel()
	// The URL is printed once the authorization waits for its redirect:
	// reading it is the signal to redirect.
	pr, pw := io.Pipe()
	a := &loopbackAuthorizer{out: pw}
	defer a.close()
	uri, err := a.RedirectURI(context.Background(), "records")
	if err != nil || !strings.HasPrefix(uri, "http://127.0.0.1:") {
		t.Fatalf("redirect URI %q %v", uri, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan url.Values, 1)
	go func() {
		q, err := a.Authorize(ctx, mcp.AuthorizationRequest{Server: "records", Issuer: "https://as.example.test", URL: "https://as.example.test/authorize?x=1", State: "s1"})
		if err != nil {
			t.Error(err)
		}
		got <- q
	}()
	printed, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	printed2 := ""
	if resp, err := http.Get(uri + "?code=c&state=forged"); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a forged redirect: %v %v", resp, err)
	}
	resp, err := http.Get(uri + "?code=c&state=s1")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the redirect: %v %v", resp, err)
	}
	if q := <-got; q.Get("code") != "c" {
		t.Fatalf("query %v", q)
	}
	if !strings.Contains(printed+printed2, "https://as.example.test/authorize?x=1") || !strings.Contains(printed, `"records"`) {
		t.Fatalf("the URL was not printed: %s%s", printed, printed2)
	}
}

// An authorization whose context carries an opener (an ACP client that
// negotiated pablo/authorization-v1) hands the URL to it instead of
// printing it, and the redirect still comes back to the CLI's loopback
// listener; an opener's refusal fails the step. Under pablo acp
// (viaClient) with no opener nothing is printed where no one reads it: the
// step fails with a reason naming the extension.
func TestAuthorizationURLGoesToTheContextsOpener(t *testing.T) {
	var out strings.Builder
	a := &loopbackAuthorizer{out: &out, viaClient: true}
	defer a.close()
	uri, err := a.RedirectURI(context.Background(), "records")
	if err != nil {
		t.Fatal(err)
	}
	req := mcp.AuthorizationRequest{Server: "records", Issuer: "https://as.example.test", URL: "https://as.example.test/authorize?x=1", State: "s1"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var opened []string
	browser := mcp.WithAuthorizationOpener(ctx, func(_ context.Context, r mcp.AuthorizationRequest) error {
		opened = append(opened, r.URL)
		// The user's browser, redirected by the authorization server.
		resp, err := http.Get(uri + "?code=c&state=" + r.State)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	q, err := a.Authorize(browser, req)
	if err != nil || q.Get("code") != "c" || len(opened) != 1 || opened[0] != req.URL {
		t.Fatalf("query %v, err %v, opened %v", q, err, opened)
	}
	refusing := mcp.WithAuthorizationOpener(ctx, func(context.Context, mcp.AuthorizationRequest) error {
		return errors.New("the user closed it")
	})
	if _, err := a.Authorize(refusing, req); err == nil || !strings.Contains(err.Error(), "the user closed it") {
		t.Fatalf("a refusing opener: %v", err)
	}
	if _, err := a.Authorize(ctx, req); err == nil || !strings.Contains(err.Error(), "pablo/authorization-v1") {
		t.Fatalf("no opener under pablo acp: %v", err)
	}
	if out.Len() != 0 {
		t.Fatalf("printed %q", out.String())
	}
}
