package shell

import (
	"fmt"
	"sort"
	"strings"
)

// Environment limits (reference §1.10 `shell.environment`, §4.3).
const (
	EnvPrefix = "PABLO_TASK_"
	// IdempotencyEnv is the variable that carries a call's idempotency
	// key: a script that honours it can apply a retried call once. It is
	// outside EnvPrefix, so no request can set it.
	IdempotencyEnv   = "PABLO_IDEMPOTENCY_KEY"
	MaxEnvNames      = 32
	MaxEnvValueBytes = 8192
	minEnvNameBytes  = 12
	maxEnvNameBytes  = 128
)

// Environment is the `shell.environment` option: values every command gets
// and the names a task may add.
type Environment struct {
	// Values are PABLO_TASK_* variables every command gets. A request's env
	// overrides them by name.
	Values map[string]string
	// AllowedNames are the PABLO_TASK_* names a request may set. It is
	// ignored when AllowAnyName is set; otherwise an empty list admits no
	// request additions (the reference's `allowed_names = []`).
	AllowedNames []string
	// AllowAnyName admits any PABLO_TASK_* name from a request (the
	// reference's missing `allowed_names`).
	AllowAnyName bool
}

// validEnvName reports whether name matches ^PABLO_TASK_[A-Za-z0-9_]+$ and is
// 12..128 bytes long.
func validEnvName(name string) bool {
	if len(name) < minEnvNameBytes || len(name) > maxEnvNameBytes || !strings.HasPrefix(name, EnvPrefix) {
		return false
	}
	for i := len(EnvPrefix); i < len(name); i++ {
		c := name[i]
		if !(c == '_' || '0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

func checkEnvValue(name, value string) string {
	if len(value) > MaxEnvValueBytes {
		return fmt.Sprintf("value of %s is %d bytes; at most %d are allowed", name, len(value), MaxEnvValueBytes)
	}
	if strings.IndexByte(value, 0) >= 0 {
		return fmt.Sprintf("value of %s contains NUL", name)
	}
	return ""
}

// validate checks the configured environment once.
func (e Environment) validate() error {
	if len(e.Values) > MaxEnvNames || len(e.AllowedNames) > MaxEnvNames {
		return fmt.Errorf("%w: shell environment: at most %d values and %d allowed names", ErrInvalidOptions, MaxEnvNames, MaxEnvNames)
	}
	for name, value := range e.Values {
		if !validEnvName(name) {
			return fmt.Errorf("%w: shell environment value %q: names must match ^PABLO_TASK_[A-Za-z0-9_]+$ (12..128 bytes)", ErrInvalidOptions, name)
		}
		if problem := checkEnvValue(name, value); problem != "" {
			return fmt.Errorf("%w: shell environment: %s", ErrInvalidOptions, problem)
		}
	}
	for _, name := range e.AllowedNames {
		if !validEnvName(name) {
			return fmt.Errorf("%w: shell environment allowed name %q: names must match ^PABLO_TASK_[A-Za-z0-9_]+$ (12..128 bytes)", ErrInvalidOptions, name)
		}
	}
	return nil
}

// build returns the child environment: PATH, LANG, the configured values and
// the admitted request additions, sorted by name. The problem string is
// empty when the request is admitted.
func (e Environment) build(request map[string]string) ([]string, string) {
	merged := make(map[string]string, len(e.Values)+len(request))
	for name, value := range e.Values {
		merged[name] = value
	}
	for name, value := range request {
		if !validEnvName(name) {
			return nil, "env names must match ^PABLO_TASK_[A-Za-z0-9_]+$ (12..128 bytes)"
		}
		if !e.AllowAnyName && !contains(e.AllowedNames, name) {
			return nil, "env name is not in shell.environment.allowed_names"
		}
		if problem := checkEnvValue(name, value); problem != "" {
			return nil, problem
		}
		merged[name] = value
	}
	if len(merged) > MaxEnvNames {
		return nil, fmt.Sprintf("at most %d PABLO_TASK_* names are allowed, got %d", MaxEnvNames, len(merged))
	}
	names := make([]string, 0, len(merged))
	for name := range merged {
		names = append(names, name)
	}
	sort.Strings(names)
	env := make([]string, 0, 2+len(names))
	env = append(env, "PATH=/usr/bin:/bin", "LANG=C")
	for _, name := range names {
		env = append(env, name+"="+merged[name])
	}
	return env, ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
