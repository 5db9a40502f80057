package egress

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestRepositoryHostsOfALinkedWorkTree: from a directory inside a linked
// work tree (a .git file naming its git directory, whose commondir names
// the main repository), the remotes are the main repository's.
func TestRepositoryHostsOfALinkedWorkTree(t *testing.T) {
	t.Parallel()
	main := repoWithRemotes(t, map[string][]string{"origin": {"https://git.example.com/team/repo.git"}})
	wtGit := filepath.Join(main, ".git", "worktrees", "linked")
	wt := filepath.Join(t.TempDir(), "linked")
	for _, d := range []string{wtGit, filepath.Join(wt, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{
		filepath.Join(wt, ".git"):         "gitdir: " + wtGit + "\n",
		filepath.Join(wtGit, "HEAD"):      "ref: refs/heads/linked\n",
		filepath.Join(wtGit, "commondir"): "../..\n",
	} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := RepositoryHosts(filepath.Join(wt, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"git.example.com"}; !slices.Equal(got, want) {
		t.Errorf("RepositoryHosts = %q, want %q", got, want)
	}
}

// TestRepositoryHostsRefusesACommondirOutOfLayout: a commondir a command
// wrote into a writable .git, naming a directory with a config of its
// own, would choose the next task's remotes; only git worktree's layout
// (COMMON/worktrees/NAME) is followed.
func TestRepositoryHostsRefusesACommondirOutOfLayout(t *testing.T) {
	t.Parallel()
	repo := repoWithRemotes(t, map[string][]string{"origin": {"https://git.example.com/team/repo.git"}})
	evil := filepath.Join(repo, "evil")
	os.MkdirAll(evil, 0o755)
	os.WriteFile(filepath.Join(evil, "config"), []byte("[remote \"x\"]\n\turl = https://evil.example.com/x.git\n"), 0o644)
	os.WriteFile(filepath.Join(repo, ".git", "commondir"), []byte("../evil\n"), 0o644)
	if got, err := RepositoryHosts(repo); !errors.Is(err, ErrRepository) || !strings.Contains(err.Error(), "layout") {
		t.Errorf("RepositoryHosts = %q, %v; want ErrRepository naming the layout", got, err)
	}
}
