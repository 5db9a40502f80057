package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pabloagent/pablo/internal/egress"
)

// Mode says whether a call runs sandboxed.
type Mode string

// The modes. The zero Mode is Required: a sandbox is the default.
const (
	// Required runs the call in the sandbox, or fails it closed.
	Required Mode = "required"
	// Off runs the call unconfined: an explicit, recorded host choice.
	Off Mode = "off"
)

// Filesystem is the filesystem scope of a sandboxed call.
type Filesystem string

// The filesystem scopes, narrowest first. The zero Filesystem is ReadOnly.
const (
	// NoFS gives a private empty working directory and the system
	// directories: no host file is visible.
	NoFS Filesystem = "no-fs"
	// ReadOnly shows the workspace read-only.
	ReadOnly Filesystem = "read-only"
	// RepoWrite shows the workspace writable when it lies in a git
	// repository's work tree, and that repository's .git read-only: the
	// work tree may change, its history and hooks may not. A workspace
	// outside any repository is refused.
	RepoWrite Filesystem = "repo-write"
	// WorkspaceWrite shows the workspace writable.
	WorkspaceWrite Filesystem = "workspace-write"
)

// Network is the network scope of a sandboxed call.
type Network string

// The network scopes, narrowest first. The zero Network is Deny.
const (
	// Deny gives the call a network namespace of its own, with only a
	// loopback interface: nothing on the host or beyond is reachable.
	Deny Network = "deny"
	// Allowlist keeps the network namespace of Deny; the only way out is
	// the filtering proxy of package egress, reached through a Unix socket
	// bound into the sandbox (see [Egress]), which carries HTTP and HTTPS
	// only to the profile's Allow entries. The TLS trust files are shown;
	// name resolution is the proxy's.
	Allowlist Network = "allowlist"
	// RepositoryHostOnly is an Allowlist whose entries are the hosts of
	// the workspace repository's git remotes, read once, when the task's
	// tools are built ([Profile.ResolveRepositoryHosts]), and nothing
	// else. Its Allow, when set, is a bound a narrowing layer wrote: only
	// the remotes' hosts those entries allow are kept.
	RepositoryHostOnly Network = "repository-host-only"
	// UnrestrictedWithApproval shares the host's network as Allow does,
	// and every call of a tool with this scope asks the task's approver
	// first (builtin.approval.unrestricted_network), an "allow for this
	// task" answer included: no answer covers a later call.
	UnrestrictedWithApproval Network = "unrestricted-with-approval"
	// Allow shares the host's network, and shows the files name
	// resolution and TLS need.
	Allow Network = "allow"
)

// SharesHostNetwork reports whether a call under p reaches the host's
// network directly: network allow or unrestricted-with-approval.
func (p Profile) SharesHostNetwork() bool {
	return p.Network == Allow || p.Network == UnrestrictedWithApproval
}

// ErrInvalidProfile is the kind of a Profile that cannot be used.
var ErrInvalidProfile = errors.New("sandbox: invalid profile")

// Profile is the sandbox one call runs in. The zero value is the default:
// required, the workspace read-only, no network.
type Profile struct {
	Mode       Mode       `json:"mode"`
	Filesystem Filesystem `json:"filesystem,omitempty"`
	Network    Network    `json:"network,omitempty"`
	// ReadPaths are further absolute host paths shown read-only at the
	// same place (a server's own installation, say).
	ReadPaths []string `json:"read_paths,omitempty"`
	// Allow are the egress allow entries of network allowlist (see
	// egress.ParseAllow), or the bound of repository-host-only; no other
	// network keeps any.
	Allow []string `json:"allow,omitempty"`
	// FromRepository says an allowlist's entries were resolved from the
	// workspace repository's remotes (network repository-host-only).
	FromRepository bool `json:"from_repository,omitempty"`
	// KeepGitConfig keeps the files from which the workspace repository's
	// remotes are read (its .git file, the git directory's config,
	// config.worktree and commondir, the common directory's config)
	// read-only under filesystem workspace-write, when they lie in the
	// workspace. A host sets it on every sandbox of a deployment that uses
	// network repository-host-only anywhere: a command that wrote a remote
	// there would widen the next task's allowlist. Under repo-write the
	// whole .git is read-only already.
	KeepGitConfig bool `json:"-"`
}

// Normalized returns p with its defaults written out: mode required,
// filesystem read-only, network deny. A profile that is off keeps no
// scopes: nothing confines it.
func (p Profile) Normalized() Profile {
	if p.Mode == "" {
		p.Mode = Required
	}
	if p.Mode == Off {
		return Profile{Mode: Off}
	}
	if p.Filesystem == "" {
		p.Filesystem = ReadOnly
	}
	if p.Network == "" {
		p.Network = Deny
	}
	if p.Network != Allowlist && p.Network != RepositoryHostOnly {
		p.Allow = nil
	}
	if p.Network != Allowlist {
		p.FromRepository = false
	}
	return p
}

// Validate checks p's values: known mode and scopes, clean absolute read
// paths.
func (p Profile) Validate() error {
	switch p.Mode {
	case "", Required, Off:
	default:
		return fmt.Errorf("%w: mode %q: want \"required\" or \"off\"", ErrInvalidProfile, p.Mode)
	}
	if rank(fsOrder, p.Filesystem) < 0 {
		return fmt.Errorf("%w: filesystem %q: want \"no-fs\", \"read-only\", \"repo-write\" or \"workspace-write\"", ErrInvalidProfile, p.Filesystem)
	}
	if rank(netOrder, p.Network) < 0 {
		return fmt.Errorf("%w: network %q: want \"deny\", \"repository-host-only\", \"allowlist\", \"unrestricted-with-approval\" or \"allow\"", ErrInvalidProfile, p.Network)
	}
	if p.Network == Allowlist || p.Network == RepositoryHostOnly {
		if _, err := egress.ParseAllow(p.Allow); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidProfile, err)
		}
	} else if len(p.Allow) > 0 {
		return fmt.Errorf("%w: allow entries need network \"allowlist\", not %q", ErrInvalidProfile, p.Network)
	}
	for _, r := range p.ReadPaths {
		if !filepath.IsAbs(r) || filepath.Clean(r) != r || strings.IndexByte(r, 0) >= 0 {
			return fmt.Errorf("%w: read path %q must be a clean absolute path", ErrInvalidProfile, r)
		}
		if r == "/" || within("/proc", r) || within("/dev", r) || within("/sys", r) {
			return fmt.Errorf("%w: read path %q would show the host's root, /proc, /dev or /sys", ErrInvalidProfile, r)
		}
	}
	return nil
}

var (
	fsOrder  = []Filesystem{"", NoFS, ReadOnly, RepoWrite, WorkspaceWrite}
	netOrder = []Network{"", Deny, RepositoryHostOnly, Allowlist, UnrestrictedWithApproval, Allow}
)

func rank[T comparable](order []T, v T) int { return slices.Index(order, v) }

// Narrow returns p narrowed by ceiling, a layer's sandbox as written:
// each scope it writes bounds p's, and one that writes mode "required" or
// any scope requires the sandbox, turning a profile that is off back on at
// the narrow defaults (read-only, no network) before it narrows them.
// Layers narrow, never widen: a ceiling that writes nothing, or mode
// "off", narrows nothing. Read paths are p's: a ceiling names no host path.
func (p Profile) Narrow(ceiling Profile) Profile {
	p, c := p.Normalized(), ceiling
	if c.Mode == Off || c.Mode == "" && c.Filesystem == "" && c.Network == "" {
		return p
	}
	if p.Mode == Off {
		p = Profile{}.Normalized()
	}
	if c.Filesystem != "" && rank(fsOrder, c.Filesystem) < rank(fsOrder, p.Filesystem) {
		p.Filesystem = c.Filesystem
	}
	bounded := func(n Network) bool { return n == Allowlist || n == RepositoryHostOnly }
	switch {
	case c.Network == RepositoryHostOnly && p.Network == Allowlist:
		// The remotes' hosts, bounded by p's own list (and c's bound).
		p.Network, p.Allow = RepositoryHostOnly, intersect(p.Allow, c.Allow)
	case c.Network != "" && rank(netOrder, c.Network) < rank(netOrder, p.Network):
		p.Network, p.Allow = c.Network, slices.Clone(c.Allow)
	case bounded(c.Network) && bounded(p.Network):
		// Both lists bound the call: keep the entries both write. A
		// repository-host-only bound that is nil bounds nothing.
		p.Allow = intersect(p.Allow, c.Allow)
		if p.Network == RepositoryHostOnly && c.Network == Allowlist && p.Allow == nil {
			p.Allow = []string{}
		}
	}
	return p
}

// intersect is the entries both a and b write; a nil list (an unbounded
// repository-host-only) bounds nothing.
func intersect(a, b []string) []string {
	switch {
	case a == nil:
		return slices.Clone(b)
	case b == nil:
		return slices.Clone(a)
	}
	out := slices.DeleteFunc(slices.Clone(a), func(e string) bool { return !slices.Contains(b, e) })
	if out == nil {
		out = []string{}
	}
	return out
}

// ResolveRepositoryHosts turns a repository-host-only profile into the
// allowlist of the hosts of the remotes of the git repository holding
// workspace (egress.RepositoryHosts), kept to those its bound allows, and
// marked FromRepository; any other profile is returned as it is. An
// error wraps egress.ErrRepository.
func (p Profile) ResolveRepositoryHosts(workspace string) (Profile, error) {
	p = p.Normalized()
	if p.Mode == Off || p.Network != RepositoryHostOnly {
		return p, nil
	}
	hosts, err := egress.RepositoryHosts(workspace)
	if err != nil {
		return p, err
	}
	if p.Allow != nil {
		bound, err := egress.New(egress.Options{Allow: p.Allow})
		if err != nil {
			return p, fmt.Errorf("%w: %w", ErrInvalidProfile, err)
		}
		hosts = slices.DeleteFunc(hosts, func(h string) bool { return !bound.AllowsEntry(h) })
	}
	if hosts == nil {
		hosts = []string{}
	}
	p.Network, p.Allow, p.FromRepository = Allowlist, hosts, true
	return p, nil
}

// Within reports whether p is at most ceiling: p.Narrow(ceiling) is p.
func (p Profile) Within(ceiling Profile) bool {
	n, q := p.Normalized(), p.Narrow(ceiling)
	return n.Mode == q.Mode && n.Filesystem == q.Filesystem && n.Network == q.Network && slices.Equal(n.Allow, q.Allow)
}

// String writes the profile as decisions and reports show it:
// "off", or "required filesystem=read-only network=deny".
func (p Profile) String() string {
	p = p.Normalized()
	if p.Mode == Off {
		return string(Off)
	}
	s := fmt.Sprintf("%s filesystem=%s network=%s", p.Mode, p.Filesystem, p.Network)
	switch {
	case p.Network == Allowlist && p.FromRepository:
		s += " allow=" + strings.Join(p.Allow, ",") + " from=repository-remotes"
	case p.Network == Allowlist, p.Network == RepositoryHostOnly && p.Allow != nil:
		s += " allow=" + strings.Join(p.Allow, ",")
	}
	if len(p.ReadPaths) > 0 {
		s += fmt.Sprintf(" read_paths=%d", len(p.ReadPaths))
	}
	return s
}

// within reports whether p is dir or below it; both are clean and
// absolute.
func within(dir, p string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
