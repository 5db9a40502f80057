package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"

	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/postgres"
)

// storeEnv names the store when --store is not given: a bbolt path or a
// postgres:// URL, as --store takes it.
const storeEnv = "PABLO_STORE"

// storeValue is the store a command names: --store, else $PABLO_STORE,
// else none ("").
func storeValue(h *host, p *parsed) string {
	if v := p.one("store"); v != "" {
		return v
	}
	if v, ok := h.lookupEnv(storeEnv); ok {
		return v
	}
	return ""
}

// openStore opens the ledger store named by value: a postgres:// or
// postgresql:// URL opens the PostgreSQL store (whose password comes from
// PGPASSWORD or PGPASSFILE, never from the URL), any other connection
// string (a key=value one, a misspelt scheme) is refused without being
// repeated, anything else is the
// path of a bbolt database. A read-only open never creates or migrates
// either. The error never holds the URL's user information or a password.
func openStore(ctx context.Context, h *host, d *pablo.Deployment, value string, readOnly bool) (ledger.Store, error) {
	if !postgres.IsConnectionString(value) {
		s, err := ledger.OpenBolt(value, ledger.BoltOptions{ReadOnly: readOnly})
		if err != nil {
			return nil, err
		}
		if readOnly {
			return s, nil
		}
		return withFault(h, s), nil
	}
	if err := postgres.CheckURL(value); err != nil {
		return nil, err
	}
	opts := postgres.Options{URL: value, ReadOnly: readOnly, Clock: faultClock(h)}
	pw, err := storePassword(ctx, h, d)
	if err != nil {
		return nil, err
	}
	opts.Password = pw
	s, err := postgres.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	if readOnly {
		return s, nil
	}
	return withFault(h, s), nil
}

// storePassword is the PostgreSQL store's password: the deployment's
// credential for the ledger.store consumer when it has one, else libpq's
// PGPASSWORD read through the host's environment, else "" (pgx then reads
// PGPASSFILE, or ~/.pgpass, itself).
func storePassword(ctx context.Context, h *host, d *pablo.Deployment) (string, error) {
	if d != nil {
		var names []string
		for name, c := range d.Credentials() {
			if c.Consumer == authority.ConsumerLedgerStore {
				names = append(names, name)
			}
		}
		switch len(names) {
		case 0:
		case 1:
			r, err := d.Resolver(authority.ResolverOptions{LookupEnv: h.lookupEnv})
			if err != nil {
				return "", err
			}
			secret, err := r.Resolve(ctx, names[0], authority.ConsumerLedgerStore, authority.DestinationLedgerStore)
			if err != nil {
				return "", err
			}
			return secret.Reveal(), nil
		default:
			slices.Sort(names)
			return "", fmt.Errorf("credentials %q are all for the ledger.store consumer; keep one", names)
		}
	}
	if pw, ok := h.lookupEnv("PGPASSWORD"); ok {
		return pw, nil
	}
	return "", nil
}
