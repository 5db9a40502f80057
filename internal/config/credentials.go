package config

import (
	"slices"

	"github.com/pabloagent/pablo/authority"
)

// credUse is one place configuration names a credential: the consumer it
// must be declared for and the one destination it may reach from there.
type credUse struct {
	ptr, name   string
	consumer    authority.Consumer
	destination string
	// explicit is false for the default options.model.credential: a
	// missing record is then credential_unavailable at run time, not a
	// deployment error.
	explicit bool
}

// checkCredentials resolves references to records and records each
// credential's exact destinations.
func (d *Deployment) checkCredentials(uses []credUse) error {
	dests := map[string][]string{}
	for _, u := range uses {
		c, ok := d.credentials[u.name]
		if !ok {
			if !u.explicit {
				continue // a default reference: credential_unavailable at run time
			}
			return invalid(u.ptr, "no credential named %q", u.name)
		}
		if c.Consumer != u.consumer {
			return invalid(u.ptr, "credential %q is for consumer %s, not %s", u.name, c.Consumer, u.consumer)
		}
		if !slices.Contains(dests[u.name], u.destination) {
			dests[u.name] = append(dests[u.name], u.destination)
		}
	}
	// A ledger.store credential is named by no option: the host opens the
	// store (--store), so its one destination is that store.
	for name, c := range d.credentials {
		if c.Consumer == authority.ConsumerLedgerStore {
			dests[name] = []string{authority.DestinationLedgerStore}
		}
	}
	d.credDests = dests
	return nil
}

// Resolver returns a credential resolver for this deployment: each record
// bound to exactly the destinations configuration gives it.
func (d *Deployment) Resolver(opts authority.ResolverOptions) (*authority.Resolver, error) {
	for _, name := range sortedKeysOf(d.credentials) {
		ref := d.credentials[name]
		c := authority.Credential{Name: name, Consumer: ref.Consumer, Destinations: d.credDests[name]}
		for _, s := range ref.Sources {
			src := authority.Source{Kind: authority.SourceKind(s.Kind), Name: s.Name, Encoding: s.Encoding, Key: s.Key}
			if s.Path != nil {
				p, err := d.ResolvePath(*s.Path)
				if err != nil {
					return nil, err
				}
				src.Path = p
			}
			c.Sources = append(c.Sources, src)
		}
		opts.Credentials = append(opts.Credentials, c)
	}
	return authority.NewResolver(opts), nil
}
