package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// TestFaultServerRunsSandboxed: the fault server answers from inside the
// default sandbox (its directory shown read-only, no network), and a
// required sandbox that cannot be made fails the server's start closed.
func TestFaultServerRunsSandboxed(t *testing.T) {
	t.Parallel()
	srv := faultStdio(t, "boxed", "ok")
	srv.Sandbox = Sandbox{}
	srv.Dir = t.TempDir()
	c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv)})
	res, err := c.CallTool(context.Background(), "mcp/boxed/echo", json.RawMessage(`{"message":"inside"}`))
	if err != nil || len(res.Text) == 0 || res.Text[0] != "echo: inside" {
		t.Fatalf("echo: %+v, %v", res, err)
	}

	_, err = Open(context.Background(), Options{Servers: []Server{srv}, Authority: allowAll(t, srv), BubblewrapPath: "/nonexistent/bwrap"})
	var se *ServerError
	if !errors.As(err, &se) || se.Code != CodeLauncher || !errors.Is(err, ErrSandboxUnavailable) {
		t.Fatalf("got %v; want mcp_launcher wrapping ErrSandboxUnavailable", err)
	}
}
