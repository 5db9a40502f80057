package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
	"github.com/pabloagent/pablo/event"
)

// serveACP serves sessions on in and out until the client closes in (exit
// 0) or ctx ends (SIGINT, SIGTERM: exit 130); a connection the server had
// to close (a broken frame, a bound, a stalled write) exits 1. Diagnostics
// go to diag, never to out.
func serveACP(ctx context.Context, sessions *pablo.Sessions, in io.Reader, out, diag io.Writer, durable bool, dep *event.DeploymentRef, commands []acp.Command) error {
	err := acp.Serve(ctx, sessions, in, out, acp.Options{
		Logger:     slog.New(slog.NewTextHandler(diag, nil)),
		Agent:      acp.Implementation{Name: "pablo", Version: Version},
		Durable:    durable,
		Deployment: dep,
		Commands:   commands,
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return &exitError{code: 130}
	}
	return &exitError{code: 1, err: err}
}
