package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// ErrRepository is the kind of a repository-host-only allowlist that
// cannot be read: no git repository holds the workspace, or a remote's
// host cannot be an allow entry.
var ErrRepository = errors.New("egress: repository hosts")

// RepositoryHosts reads the remotes of the git repository whose work tree
// holds dir and returns an allow entry for the host of each remote URL,
// sorted, each once: "host" for http and https on their default ports
// (the proxy's 80 and 443), "host:port" otherwise (ssh's 22, git's 9418,
// an explicit port). Local remotes (a path, file://) reach no host and add
// none; a repository without remotes yields no entry, so nothing is
// reachable. A remote whose host no entry can name fails the read.
func RepositoryHosts(dir string) ([]string, error) {
	_, commonDir, err := findGitDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is in no git repository (%v): network \"repository-host-only\" allows the hosts of the workspace repository's remotes; bind a work tree, or use \"allowlist\"", ErrRepository, dir, err)
	}
	f, err := os.Open(filepath.Join(commonDir, "config"))
	if err != nil {
		return nil, fmt.Errorf("%w: read the remotes of %s: %v", ErrRepository, dir, err)
	}
	cfg, err := config.ReadConfig(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: read the remotes of %s: %v", ErrRepository, dir, err)
	}
	remotes := make([]*config.RemoteConfig, 0, len(cfg.Remotes))
	for _, r := range cfg.Remotes {
		remotes = append(remotes, r)
	}
	var out []string
	for _, r := range remotes {
		for _, u := range r.URLs {
			e, err := remoteEntry(u)
			if err != nil {
				return nil, fmt.Errorf("%w: remote %q: %v; remove the remote or use network \"allowlist\"", ErrRepository, r.Name, err)
			}
			if e != "" && !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// findGitDir finds the repository whose work tree holds dir as git does:
// the nearest .git from dir up, a directory or a file naming one
// ("gitdir: PATH", a linked work tree or a submodule); a git directory
// without HEAD is none. commonDir is where its config lives: the one its
// commondir file names (a linked work tree's main repository), or itself.
// It reads the files alone: go-git's repository package would link its
// every transport (ssh, its agent and known-hosts readers) and their
// package initialisers into every process, for the remotes' URLs.
func findGitDir(dir string) (gitDir, commonDir string, err error) {
	path, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		path = filepath.Dir(path)
	}
	for {
		fi, err := os.Stat(filepath.Join(path, ".git"))
		if err == nil {
			gitDir = filepath.Join(path, ".git")
			if !fi.IsDir() {
				b, err := os.ReadFile(gitDir)
				if err != nil {
					return "", "", err
				}
				line, _, _ := strings.Cut(string(b), "\n")
				named, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir: ")
				if !ok {
					return "", "", fmt.Errorf("%s has no gitdir: line", gitDir)
				}
				gitDir = strings.TrimSpace(named)
				if !filepath.IsAbs(gitDir) {
					gitDir = filepath.Join(path, gitDir)
				}
			}
			break
		}
		if !os.IsNotExist(err) {
			return "", "", err
		}
		parent := filepath.Dir(path)
		if parent == path {
			return "", "", errors.New("repository does not exist")
		}
		path = parent
	}
	if _, err := os.Stat(filepath.Join(gitDir, "HEAD")); err != nil {
		return "", "", errors.New("repository does not exist")
	}
	commonDir = gitDir
	switch b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); {
	case err == nil && strings.TrimSpace(string(b)) != "":
		commonDir = strings.TrimSpace(string(b))
		if !filepath.IsAbs(commonDir) {
			commonDir = filepath.Join(gitDir, commonDir)
		}
		// Only the layout git worktree makes, COMMON/worktrees/NAME: a
		// commondir a command wrote into a writable .git would otherwise
		// choose a config of its own, and the next task's remotes.
		if admin := filepath.Dir(filepath.Clean(gitDir)); filepath.Base(admin) != "worktrees" || filepath.Clean(commonDir) != filepath.Dir(admin) {
			return "", "", fmt.Errorf("%s names %s as the repository's common directory, which is not the git directory's COMMON/worktrees/NAME layout", filepath.Join(gitDir, "commondir"), commonDir)
		}
		if _, err := os.Stat(commonDir); err != nil {
			return "", "", fmt.Errorf("the repository's common directory: %w", err)
		}
	case err != nil && !os.IsNotExist(err):
		return "", "", err
	}
	return gitDir, commonDir, nil
}

// GitDirs returns the git directory of the repository whose work tree
// holds dir and its common directory (where its config is), found as
// RepositoryHosts finds them.
func GitDirs(dir string) (gitDir, commonDir string, err error) { return findGitDir(dir) }

// remoteEntry is the allow entry of one remote URL, "" for a local one.
func remoteEntry(u string) (string, error) {
	ep, err := transport.NewEndpoint(u)
	if err != nil {
		return "", fmt.Errorf("the URL does not parse: %v", err)
	}
	proto := strings.ToLower(ep.Protocol)
	if proto == "file" || ep.Host == "" {
		return "", nil
	}
	host := strings.TrimSuffix(strings.TrimPrefix(ep.Host, "["), "]")
	port := ep.Port
	if port == 0 {
		switch proto {
		case "http":
			port = 80
		case "https":
			port = 443
		case "ssh":
			port = 22
		case "git":
			port = 9418
		default:
			return "", fmt.Errorf("protocol %q has no known port", ep.Protocol)
		}
	}
	var e string
	switch ip, err := netip.ParseAddr(host); {
	case err == nil && ip.Is6():
		e = "[" + ip.String() + "]:" + strconv.Itoa(port)
	case err == nil:
		e = ip.String() + ":" + strconv.Itoa(port)
	case (proto == "http" || proto == "https") && (port == 80 || port == 443):
		e = host
	default:
		e = host + ":" + strconv.Itoa(port)
	}
	if _, err := ParseAllow([]string{e}); err != nil {
		return "", err
	}
	return e, nil
}

// RepositoryRoot is the directory holding the nearest .git at or above
// workspace (workspace itself when none does): what a host passes to
// RepositoryHosts at each task's start, found once when its runtime is
// built. A .git a sandboxed command makes later in a workspace below the
// repository's root (where no sandbox shows the repository's own) then
// does not choose the remotes of the tasks after it.
func RepositoryRoot(workspace string) string {
	for d := workspace; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			return workspace
		}
	}
}
