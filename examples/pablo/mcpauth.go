package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pabloagent/pablo/mcp"
)

// tokenFileName is the CLI's OAuth token store, under the user's
// configuration directory (os.UserConfigDir, e.g. ~/.config/pablo).
const tokenFileName = "mcp-tokens.json"

// fileTokenStore is an mcp.TokenStore over one JSON file that only its
// owner can read (0600, in a 0700 directory). A file that others can read
// is refused, not used: its tokens may have leaked.
type fileTokenStore struct {
	path string
	mu   sync.Mutex
}

// tokenEntry is one grant in the file.
type tokenEntry struct {
	Key   mcp.TokenKey `json:"key"`
	Grant mcp.Grant    `json:"grant"`
}

// tokenStore is the host's token store: under h.configDir when set
// (tests), else the user's configuration directory.
func (h *host) tokenStore() (*fileTokenStore, error) {
	dir := h.configDir
	if dir == "" {
		d, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("the OAuth token store needs a user configuration directory: %w", err)
		}
		dir = d
	}
	return &fileTokenStore{path: filepath.Join(dir, "pablo", tokenFileName)}, nil
}

func (s *fileTokenStore) read() ([]tokenEntry, error) {
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("the token file %s is not a regular file only its owner can read (mode %v): its tokens may have leaked; revoke them, remove the file and authorize again", s.path, info.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, 4<<20))
	if err != nil {
		return nil, err
	}
	var entries []tokenEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		return nil, fmt.Errorf("the token file %s does not decode: %v", s.path, err)
	}
	return entries, nil
}

// Load implements mcp.TokenStore.
func (s *fileTokenStore) Load(_ context.Context, key mcp.TokenKey) (mcp.Grant, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries, err := s.read()
	if err != nil {
		return mcp.Grant{}, false, err
	}
	for _, e := range entries {
		if e.Key == key {
			return e.Grant, true, nil
		}
	}
	return mcp.Grant{}, false, nil
}

// Save implements mcp.TokenStore: the whole file is rewritten through a
// 0600 temporary file renamed over it.
func (s *fileTokenStore) Save(_ context.Context, key mcp.TokenKey, g mcp.Grant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries, err := s.read()
	if err != nil {
		return err
	}
	replaced := false
	for i := range entries {
		if entries[i].Key == key {
			entries[i].Grant, replaced = g, true
		}
	}
	if !replaced {
		entries = append(entries, tokenEntry{Key: key, Grant: g})
	}
	b, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".mcp-tokens-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), s.path)
}

// loopbackAuthorizer is the CLI's authorization step: it prints the
// authorization URL for the user to open and receives the browser's
// redirect on a loopback listener (RFC 8252), started on first use.
type loopbackAuthorizer struct {
	out io.Writer
	// viaClient: the user sees no stderr (pablo acp), so the URL goes
	// only to an opener on the context (mcp.WithAuthorizationOpener), and
	// with none the step fails.
	viaClient bool

	mu      sync.Mutex
	srv     *http.Server
	done    chan struct{}
	uri     string
	waiting map[string]chan url.Values
}

// RedirectURI implements mcp.Authorizer.
func (a *loopbackAuthorizer) RedirectURI(context.Context, string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.srv != nil {
		return a.uri, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listen for the authorization redirect on loopback: %w", err)
	}
	a.waiting = map[string]chan url.Values{}
	a.uri = "http://" + ln.Addr().String() + "/callback"
	a.srv = &http.Server{Handler: http.HandlerFunc(a.callback), ReadHeaderTimeout: 10 * time.Second}
	a.done = make(chan struct{})
	go func() {
		defer close(a.done)
		_ = a.srv.Serve(ln)
	}()
	return a.uri, nil
}

func (a *loopbackAuthorizer) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a.mu.Lock()
	ch := a.waiting[q.Get("state")]
	delete(a.waiting, q.Get("state"))
	a.mu.Unlock()
	if r.URL.Path != "/callback" || ch == nil {
		http.Error(w, "pablo: no authorization is waiting for this redirect", http.StatusBadRequest)
		return
	}
	ch <- q
	fmt.Fprintln(w, "pablo: authorization received; you can close this window.")
}

// Authorize implements mcp.Authorizer.
func (a *loopbackAuthorizer) Authorize(ctx context.Context, req mcp.AuthorizationRequest) (url.Values, error) {
	ch := make(chan url.Values, 1)
	a.mu.Lock()
	if a.waiting == nil {
		a.mu.Unlock()
		return nil, errors.New("no redirect listener: RedirectURI was not called")
	}
	a.waiting[req.State] = ch
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.waiting, req.State)
		a.mu.Unlock()
	}()
	switch open := mcp.AuthorizationOpenerFrom(ctx); {
	case open != nil:
		if err := open(ctx, req); err != nil {
			return nil, err
		}
	case a.viaClient:
		return nil, errors.New("the ACP client did not negotiate pablo/authorization-v1, so no one can open the authorization URL: authorize the server once with `pablo mcp probe` in a terminal (the grant is kept), or use a client that offers the extension")
	default:
		// One write, so a reader sees the whole message at once.
		fmt.Fprintf(a.out, "pablo: MCP server %q needs your authorization (%s); open this URL in a browser: %s\n", req.Server, req.Issuer, req.URL)
	}
	select {
	case q := <-ch:
		return q, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("no authorization arrived: %w", context.Cause(ctx))
	}
}

// close stops the listener, if one was started, and joins it.
func (a *loopbackAuthorizer) close() {
	a.mu.Lock()
	srv, done := a.srv, a.done
	a.mu.Unlock()
	if srv != nil {
		srv.Close()
		<-done
	}
}

// mcpAuth is what every command that opens MCP servers hands the library:
// the token store (none when the user has no configuration directory: a
// grant then lasts one catalog) and the authorization step. release stops
// the listener.
func (h *host) mcpAuth() (store mcp.TokenStore, authorizer mcp.Authorizer, release func()) {
	if s, err := h.tokenStore(); err == nil {
		store = s
	}
	a := &loopbackAuthorizer{out: h.stderr}
	return store, a, a.close
}
