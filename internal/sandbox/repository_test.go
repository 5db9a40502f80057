package sandbox

import (
	"errors"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"

	"github.com/pabloagent/pablo/internal/egress"
)

// TestRepositoryHostOnlyNarrowsAndResolves: repository-host-only lies
// between deny and allowlist; a layer's allowlist bounds it, an
// allowlist under a repository-host-only layer becomes it, bounded by its
// own entries; resolved, it is the allowlist of the remotes' hosts the
// bound allows, marked as read from the repository.
func TestRepositoryHostOnlyNarrowsAndResolves(t *testing.T) {
	t.Parallel()
	rho := Profile{Network: RepositoryHostOnly}
	if got := rho.Narrow(Profile{Network: Deny}).Network; got != Deny {
		t.Errorf("under deny: %s", got)
	}
	if got := (Profile{Network: Allow}).Narrow(rho); got.Network != RepositoryHostOnly || got.Allow != nil {
		t.Errorf("allow under repository-host-only: %+v", got)
	}
	bound := rho.Narrow(Profile{Network: Allowlist, Allow: []string{"git.example.com"}})
	if bound.Network != RepositoryHostOnly || !slices.Equal(bound.Allow, []string{"git.example.com"}) {
		t.Errorf("under an allowlist: %+v, want repository-host-only bounded by it", bound)
	}
	if got := (Profile{Network: Allowlist, Allow: []string{"a.example.com"}}).Narrow(rho); got.Network != RepositoryHostOnly || !slices.Equal(got.Allow, []string{"a.example.com"}) {
		t.Errorf("allowlist under repository-host-only: %+v", got)
	}

	dir := t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{"https://git.example.com/r.git", "https://evil.example.net/r.git"}}); err != nil {
		t.Fatal(err)
	}
	all, err := rho.ResolveRepositoryHosts(dir)
	if err != nil || all.Network != Allowlist || !all.FromRepository || !slices.Equal(all.Allow, []string{"evil.example.net", "git.example.com"}) {
		t.Fatalf("resolved %+v, %v", all, err)
	}
	if s := all.String(); s != "required filesystem=read-only network=allowlist allow=evil.example.net,git.example.com from=repository-remotes" {
		t.Errorf("String() = %q", s)
	}
	kept, err := bound.ResolveRepositoryHosts(dir)
	if err != nil || !slices.Equal(kept.Allow, []string{"git.example.com"}) {
		t.Errorf("bounded resolution %+v, %v, want only the host the bound allows", kept, err)
	}
	if _, err := rho.ResolveRepositoryHosts(t.TempDir()); !errors.Is(err, egress.ErrRepository) {
		t.Errorf("no repository: %v", err)
	}
	if _, err := NewLauncher("").Command(rho, Spec{Path: "/bin/true", Args: []string{"true"}, Workspace: dir}); err == nil {
		t.Error("an unresolved repository-host-only profile was launched")
	}
}
