package authority_test

import (
	"context"
	"errors"
	"testing"

	"github.com/pabloagent/pablo/authority"
)

// TestLedgerStoreCredentialResolvesOnlyForTheStore: a ledger.store
// credential is a consumer of its own, resolved only for it and its one
// destination.
func TestLedgerStoreCredentialResolvesOnlyForTheStore(t *testing.T) {
	t.Parallel()
	if c, ok := authority.ParseConsumer("ledger.store"); !ok || c != authority.ConsumerLedgerStore {
		t.Fatalf("ParseConsumer(ledger.store) = %q, %v", c, ok)
	}
	env := map[string]string{"PW": "pg-secret"}
	r := authority.NewResolver(authority.ResolverOptions{
		Credentials: []authority.Credential{{Name: "db", Consumer: authority.ConsumerLedgerStore, Destinations: []string{authority.DestinationLedgerStore},
			Sources: []authority.Source{{Kind: authority.SourceEnvironment, Name: "PW"}}}},
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	})
	s, err := r.Resolve(context.Background(), "db", authority.ConsumerLedgerStore, authority.DestinationLedgerStore)
	if err != nil || s.Reveal() != "pg-secret" {
		t.Fatalf("Resolve = %v", err)
	}
	if _, err := r.Resolve(context.Background(), "db", authority.ConsumerMCPEnv, authority.DestinationLedgerStore); !errors.Is(err, authority.ErrCredential) {
		t.Fatalf("resolved for another consumer: %v", err)
	}
	if _, err := r.Resolve(context.Background(), "db", authority.ConsumerLedgerStore, "https://elsewhere.example"); !errors.Is(err, authority.ErrCredential) {
		t.Fatalf("resolved for another destination: %v", err)
	}
}
