package authority

import (
	"errors"
	"fmt"
	"slices"

	"github.com/pabloagent/pablo/internal/textx"
)

// ErrRoleMissing: a capability requires a role the task does not hold. A
// [DeniedError] whose decision names a MissingRole matches it.
var ErrRoleMissing = errors.New("authority: required role missing")

// RoleBinder is an optional capability of an Authority, named as
// http.Flusher is: it gives a task's roles to an authority whose rules or
// configuration require roles. A [*Set] is one. The runtime binds the
// roles a host gives a task (TaskRequest.Roles) once, at the task's
// start; a child inherits the bound authority and can only narrow its
// roles ([Narrowing].Roles), never gain one.
type RoleBinder interface {
	Authority
	// WithRoles returns this authority holding exactly roles. An
	// authority that already holds roles takes only a subset of them:
	// asking for another is an error wrapping ErrWiden.
	WithRoles(roles []string) (Authority, error)
}

// validRole reports whether role is a role name: 1 to 64 characters of
// lowercase letters, digits, '-', '_', '.' and ':' starting with a letter
// or digit.
func validRole(role string) bool {
	if role == "" || len(role) > 64 {
		return false
	}
	for i, r := range role {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case i > 0 && (r == '-' || r == '_' || r == '.' || r == ':'):
		default:
			return false
		}
	}
	return true
}

// ValidateRoles checks a list of role names, as a rule's or a task's.
func ValidateRoles(roles []string) error {
	for _, r := range roles {
		if !validRole(r) {
			return fmt.Errorf("role %q: want 1 to 64 lowercase letters, digits, '-', '_', '.' or ':', starting with a letter or digit", textx.Shorten(r, 80))
		}
	}
	return nil
}

// WithRoles implements [RoleBinder]: the result is this Set holding
// exactly roles (sorted, without repeats). A Set built by [New] holds no
// role and may be given any; one that holds roles (a bound task's, a
// child's) takes only a subset of its own.
func (s *Set) WithRoles(roles []string) (Authority, error) { return s.WithRolesSet(roles) }

// WithRolesSet is WithRoles with a concrete result.
func (s *Set) WithRolesSet(roles []string) (*Set, error) {
	if err := ValidateRoles(roles); err != nil {
		return nil, fmt.Errorf("authority: %w", err)
	}
	held := slices.Compact(slices.Sorted(slices.Values(roles)))
	if s.rolesBound {
		for _, r := range held {
			if !slices.Contains(s.roles, r) {
				return nil, fmt.Errorf("role %q: %w (the parent does not hold it)", r, ErrWiden)
			}
		}
	}
	out := s.clone()
	out.roles, out.rolesBound = held, true
	return out, nil
}

// NarrowRoles is what a holder of the roles held keeps when it asks for
// asked: all of held when asked is nil, else asked, each of which held
// must hold (another is an error wrapping ErrWiden).
func NarrowRoles(held, asked []string) ([]string, error) {
	if asked == nil {
		return slices.Clone(held), nil
	}
	if err := ValidateRoles(asked); err != nil {
		return nil, err
	}
	for _, r := range asked {
		if !slices.Contains(held, r) {
			return nil, fmt.Errorf("role %q: %w (it is not given)", r, ErrWiden)
		}
	}
	return slices.Clone(asked), nil
}

// Roles returns the roles this Set holds, sorted; nil when none were
// given.
func (s *Set) Roles() []string { return slices.Clone(s.roles) }

// RequiredRoles returns every role a rule or the configuration of this Set
// requires, sorted: what the readiness check "required roles admitted"
// compares with the task's roles.
func (s *Set) RequiredRoles() []string {
	var out []string
	add := func(rs []string) { out = append(out, rs...) }
	for _, srv := range s.servers {
		add(srv.Roles)
	}
	for _, rs := range s.capRoles {
		add(rs)
	}
	for _, l := range s.layers {
		for _, r := range l.Dimensions {
			if r == nil {
				continue
			}
			for _, rule := range r.Allow {
				add(rule.Roles)
			}
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(out)))
}

// MissingRoles returns the roles of RequiredRoles this Set does not hold.
func (s *Set) MissingRoles() []string {
	return slices.DeleteFunc(s.RequiredRoles(), func(r string) bool { return slices.Contains(s.roles, r) })
}

// missingRole is the first of required this Set does not hold, or "".
func (s *Set) missingRole(required []string) string {
	for _, r := range required {
		if !slices.Contains(s.roles, r) {
			return r
		}
	}
	return ""
}

// RoleDecision is the denial of a capability that requires role, which
// the task does not hold: layer and rule are where the requirement was
// declared.
func RoleDecision(capability ID, layer, rule, role string) Decision {
	return Decision{Layer: layer, RuleID: rule, MissingRole: role,
		Reason: fmt.Sprintf("%s requires role %q, which the task does not hold (give it with TaskRequest.Roles or pablo run --role %s)", capability, role, role)}
}

// RuleRoleRequired is the rule a configuration-level role requirement
// (an MCP server's or a capability's roles) is reported under.
const RuleRoleRequired = "builtin.required_roles"
