package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/internal/egress"
)

// TestKeepGitConfigKeepsTheRemotesReadOnly: under workspace-write a
// command could write a remote into the repository's config (or a .git
// file naming a git directory of its own), and the next task of a
// repository-host-only deployment would allow that host. With
// KeepGitConfig the files the remotes are read from are read-only mount
// points, while the work tree and the rest of .git stay writable.
func TestKeepGitConfigKeepsTheRemotesReadOnly(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	root := t.TempDir()
	repo, linked := filepath.Join(root, "repo"), filepath.Join(root, "linked")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.MkdirAll(repo, 0o755)
	git(repo, "init", "-q")
	git(repo, "remote", "add", "origin", "https://git.example.test/r.git")
	os.WriteFile(filepath.Join(repo, "f"), []byte("f"), 0o644)
	git(repo, "add", "f")
	git(repo, "commit", "-qm", "f")
	git(repo, "worktree", "add", "-q", linked)
	// A worktree's own config, as extensions.worktreeConfig makes.
	os.WriteFile(filepath.Join(repo, ".git", "config.worktree"), nil, 0o644)

	const gitc = "git -c safe.directory='*' -c user.name=t -c user.email=t@t "
	keep := Profile{Filesystem: WorkspaceWrite, KeepGitConfig: true}
	for _, c := range []struct {
		name, ws, script string
		p                Profile
		allowed          bool
	}{
		{"the work tree", repo, "echo x > tracked.txt && " + gitc + "add tracked.txt && " + gitc + "commit -qm x", keep, true},
		{"append to .git/config", repo, "echo '[remote \"evil\"] url = https://evil.example.test/' >> .git/config", keep, false},
		{"git remote add", repo, gitc + "remote add evil https://evil.example.test/x.git", keep, false},
		{"git config url.insteadOf", repo, gitc + "config url.https://evil.example.test/.insteadOf https://git.example.test/", keep, false},
		{"config.worktree", repo, "echo '[include] path = x' >> .git/config.worktree", keep, false},
		{".git moved aside", repo, "mv .git .git-old", keep, false},
		{".git/config moved aside", repo, "mv .git/config .git/config-old", keep, false},
		{"a linked work tree's .git file", linked, "printf 'gitdir: ../evil\\n' > .git", keep, false},
		{"without KeepGitConfig", repo, "echo '# x' >> .git/config", Profile{Filesystem: WorkspaceWrite}, true},
	} {
		stdout, stderr, code, err := run(t, l, c.p, c.ws, c.script)
		if err != nil {
			t.Fatal(err)
		}
		if (code == 0) != c.allowed {
			t.Errorf("%s: exit %d (stdout %q, stderr %q), want allowed %v", c.name, code, stdout, stderr, c.allowed)
		}
	}
	for _, ws := range []string{repo, linked} {
		if hosts, err := egress.RepositoryHosts(ws); err != nil || strings.Join(hosts, ",") != "git.example.test" {
			t.Errorf("the remotes of %s: %v %v, want only git.example.test", ws, hosts, err)
		}
	}
}
