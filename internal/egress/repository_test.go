package egress

import (
	"errors"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
)

func repoWithRemotes(t *testing.T, urls map[string][]string) string {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	for name, u := range urls {
		if _, err := r.CreateRemote(&config.RemoteConfig{Name: name, URLs: u}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRepositoryHostsAreTheRemotesHosts: the allow entries of
// repository-host-only are the hosts of the remotes' URLs, on the ports
// their protocols use; a local remote adds none; a remote whose host no
// entry can name, and a directory in no repository, fail with
// ErrRepository. Nothing is resolved or dialled.
func TestRepositoryHostsAreTheRemotesHosts(t *testing.T) {
	t.Parallel()
	dir := repoWithRemotes(t, map[string][]string{
		"origin":   {"https://git.example.com/team/repo.git"},
		"mirror":   {"git@ssh.example.com:team/repo.git", "ssh://git@ssh2.example.com:2222/repo"},
		"fixture":  {"http://localhost:8080/repo.git", "https://[::1]:9443/repo"},
		"daemon":   {"git://git.example.org/repo"},
		"local":    {"/srv/git/repo.git", "file:///srv/git/other.git"},
		"sameHost": {"https://git.example.com/other.git"},
	})
	got, err := RepositoryHosts(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"[::1]:9443", "git.example.com", "git.example.org:9418", "localhost:8080", "ssh.example.com:22", "ssh2.example.com:2222"}
	if !slices.Equal(got, want) {
		t.Errorf("RepositoryHosts = %q, want %q", got, want)
	}
	if _, err := New(Options{Allow: got}); err != nil {
		t.Errorf("the entries do not make a proxy: %v", err)
	}

	bad := repoWithRemotes(t, map[string][]string{"odd": {"https://127.1/repo.git"}})
	if _, err := RepositoryHosts(bad); !errors.Is(err, ErrRepository) {
		t.Errorf("a remote on 127.1: %v, want ErrRepository", err)
	}
	if _, err := RepositoryHosts(t.TempDir()); !errors.Is(err, ErrRepository) {
		t.Errorf("no repository: %v, want ErrRepository", err)
	}
}
