package pablo

import (
	"net"
	"net/url"

	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/model"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/providers"
)

// httpModel builds the configured HTTP provider model (or route).
func (d *Deployment) httpModel(opts HostOptions) (model.Model, error) {
	r, err := d.Resolver(authority.ResolverOptions{LookupEnv: opts.LookupEnv, Host: opts.Host, Redact: opts.secrets})
	if err != nil {
		return nil, err
	}
	b := &engine.ModelBuilder{Deployment: d.c, Client: providers.NewClient(providers.ClientOptions{}), Resolver: r, Clock: opts.Clock, WrapRoute: wrapRoute}
	return b.Build()
}

// FixtureModel builds the configured provider (or route) against a host
// fixture: every entry talks to endpoint, a literal-loopback plain-HTTP
// URL, with the fixed fake key "pablo-fixture-key" instead of any
// configured credential. It is refused under lock and for any other URL.
func (d *Deployment) FixtureModel(endpoint string) (model.Model, error) {
	if d.Locked() {
		return nil, &config.Error{Code: config.CodeInvalidValue, Option: "--fixture-endpoint", Message: "a fixture endpoint is never allowed under lock"}
	}
	if err := checkFixtureEndpoint(endpoint); err != nil {
		return nil, err
	}
	b := &engine.ModelBuilder{Deployment: d.c, Client: providers.NewClient(providers.ClientOptions{}), Fixture: endpoint, WrapRoute: wrapRoute}
	return b.Build()
}

func checkFixtureEndpoint(endpoint string) error {
	bad := func(msg string) error {
		return &config.Error{Code: config.CodeInvalidValue, Option: "--fixture-endpoint", Message: msg}
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return bad("not a URL")
	}
	if u.Scheme != "http" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return bad("a fixture endpoint is http://127.0.0.1:PORT/... or http://[::1]:PORT/..., without userinfo, query or fragment")
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsLoopback() {
		return bad("a fixture endpoint must name a literal loopback address (127.0.0.1 or ::1), not a host name")
	}
	return nil
}
