package egress

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// ServeUnix serves a proxy built from o on a Unix socket of its own, in a
// fresh private directory, until stop: stop closes it, waits for the
// connections it serves and removes the directory. Cancelling ctx does not
// stop it; its values are lent to the proxy.
func ServeUnix(ctx context.Context, o Options) (socket string, stop func(), err error) {
	px, err := New(o)
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "pablo-egress")
	if err != nil {
		return "", nil, fmt.Errorf("egress socket: %w", err)
	}
	socket = filepath.Join(dir, "proxy.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("egress socket: %w", err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); _ = px.Serve(ctx, ln) }()
	return socket, func() { cancel(); <-done; os.RemoveAll(dir) }, nil
}
