package pablo

import (
	"context"
	"slices"
	"sort"

	"github.com/pabloagent/pablo/a2a"
	"github.com/pabloagent/pablo/authority"
)

// A2AOptions maps the deployment's A2A remotes (options.a2a.remotes) to the
// options of a2a.NewClient and a2a.NewRunner: each remote's card URL,
// endpoint, trace-context opt-in and bearer (a credential reference, still
// unresolved), a credential resolver built fresh from host (the bearer
// resolves only for a2a.bearer at the remote's exact endpoint), the
// loopback fixture switch, the parent's output ceiling and the host's
// secret set. `pablo a2a probe` and each task use it. The [[authority]]
// layers' a2a_remotes were checked when the deployment loaded: a remote no
// layer admits with the same card URL and endpoint never gets here.
func (d *Deployment) A2AOptions(host HostOptions) (a2a.Options, error) {
	o := &d.c.Options
	names := make([]string, 0, len(o.A2A.Remotes))
	for name := range o.A2A.Remotes {
		names = append(names, name)
	}
	sort.Strings(names)
	remotes := make([]a2a.Remote, 0, len(names))
	for _, name := range names {
		r := o.A2A.Remotes[name]
		remote := a2a.Remote{Name: name, CardURL: r.CardURL, Endpoint: r.Endpoint, TraceContext: r.TraceContext}
		if r.Bearer != nil {
			remote.Bearer = &a2a.Bearer{Scheme: r.Bearer.Scheme, Credential: r.Bearer.Credential}
		}
		remotes = append(remotes, remote)
	}
	resolver, err := d.Resolver(authority.ResolverOptions{LookupEnv: host.LookupEnv, Host: host.Host, Redact: host.secrets})
	if err != nil {
		return a2a.Options{}, err
	}
	opts := a2a.Options{
		Remotes:           remotes,
		Resolve:           resolver.Resolve,
		AllowLoopbackHTTP: d.c.LoopbackHTTP(),
		MaxOutputBytes:    o.Limits.MaxOutputBytes,
		NewID:             host.NewID,
	}
	if host.secrets != nil {
		// Never a nil *redact.Set in the interface: nil means the
		// client's own set.
		opts.Redact = host.secrets
	}
	return opts, nil
}

// A2ARunner returns the runner of the deployment's remote children, the
// children.RemoteRunner the supervisor takes. It offers only the remotes
// whose bearer credential (if they have one) resolves now for a2a.bearer
// at their endpoint: one that does not is the graph's missing grant
// (`pablo why remote:NAME` says so), and is not offered rather than
// failing at spawn. It returns nil (and no error) when no remote is left,
// so spawn_remote is not offered.
func (d *Deployment) A2ARunner(ctx context.Context, host HostOptions) (*a2a.Runner, error) {
	if len(d.c.Options.A2A.Remotes) == 0 {
		return nil, nil
	}
	opts, err := d.A2AOptions(host)
	if err != nil {
		return nil, err
	}
	opts.Remotes = slices.DeleteFunc(opts.Remotes, func(r a2a.Remote) bool {
		if r.Bearer == nil {
			return false
		}
		_, err := opts.Resolve(ctx, r.Bearer.Credential, authority.ConsumerA2ABearer, r.Endpoint)
		return err != nil
	})
	if len(opts.Remotes) == 0 {
		return nil, nil
	}
	return a2a.NewRunner(opts)
}
