package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5"
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
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("%w: %s is in no git repository (%v): network \"repository-host-only\" allows the hosts of the workspace repository's remotes; bind a work tree, or use \"allowlist\"", ErrRepository, dir, err)
	}
	remotes, err := repo.Remotes()
	if err != nil {
		return nil, fmt.Errorf("%w: read the remotes of %s: %v", ErrRepository, dir, err)
	}
	var out []string
	for _, r := range remotes {
		cfg := r.Config()
		for _, u := range cfg.URLs {
			e, err := remoteEntry(u)
			if err != nil {
				return nil, fmt.Errorf("%w: remote %q: %v; remove the remote or use network \"allowlist\"", ErrRepository, cfg.Name, err)
			}
			if e != "" && !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

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
