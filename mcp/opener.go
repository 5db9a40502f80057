package mcp

import "context"

// AuthorizationOpener has a user open an authorization URL somewhere
// other than where the host would print it: an editor's client opens it
// in a browser. It returns once the URL was handed over (not once the
// user authorized); an error means it could not be, with the reason.
type AuthorizationOpener func(ctx context.Context, req AuthorizationRequest) error

type openerKey struct{}

// WithAuthorizationOpener returns ctx whose tasks' authorization steps an
// [Authorizer] may hand to open, keeping its own redirect listener: the
// ACP server sets it for a client that negotiated the authorization
// extension. The catalog opens a task's servers with the task's context,
// so the Authorizer finds it on the ctx of its Authorize.
func WithAuthorizationOpener(ctx context.Context, open AuthorizationOpener) context.Context {
	return context.WithValue(ctx, openerKey{}, open)
}

// AuthorizationOpenerFrom returns the opener ctx carries, nil when none.
func AuthorizationOpenerFrom(ctx context.Context) AuthorizationOpener {
	o, _ := ctx.Value(openerKey{}).(AuthorizationOpener)
	return o
}
