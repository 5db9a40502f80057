package skills

import (
	"fmt"
	"strconv"
)

// A task may name its kind (TaskRequest.Kind, `pablo run --kind`). The
// rule, the same for activation, skill.read, the graph and the snapshot:
// a task of kind K activates, and may read, only the Skills whose
// task-kinds list K or list none. A task that names no kind keeps every
// activated Skill, as before kinds existed.

// maxTaskKind is the longest task kind, in bytes.
const maxTaskKind = 64

// ValidateTaskKind checks a task's kind: empty (no kind), or 1 to 64
// lowercase letters, digits, '-', '_', '.' or ':', starting with a letter
// or digit (a task-kinds entry is one space-separated word).
func ValidateTaskKind(kind string) error {
	if kind == "" {
		return nil
	}
	ok := len(kind) <= maxTaskKind
	for i := 0; ok && i < len(kind); i++ {
		c := kind[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '-' || c == '_' || c == '.' || c == ':'):
		default:
			ok = false
		}
	}
	if !ok {
		q := kind
		if len(q) > 80 {
			q = q[:80]
		}
		return fmt.Errorf("task kind %s: want 1 to 64 lowercase letters, digits, '-', '_', '.' or ':', starting with a letter or digit", strconv.Quote(q))
	}
	return nil
}

// Only returns the subset of a whose activations keep reports true for,
// in selection order: what an agent may read when its authority admits
// fewer Skills than were activated (a role it does not hold, a child's
// narrowed selection). It never reads files and can only remove Skills.
func (a *Active) Only(keep func(Activation) bool) *Active {
	if a == nil {
		return a
	}
	n := &Active{cat: a.cat}
	for _, s := range a.skills {
		if keep(s.Activation) {
			n.skills = append(n.skills, s)
		}
	}
	return n
}

// ForTaskKind returns the subset of a a task of kind activates and reads
// (Bundle.ForTaskKind), in selection order: a itself when kind is empty.
// It never reads files and can only remove Skills.
func (a *Active) ForTaskKind(kind string) *Active {
	if kind == "" || a == nil {
		return a
	}
	n := &Active{cat: a.cat}
	for _, s := range a.skills {
		if s.Skill.Bundle().ForTaskKind(kind) {
			n.skills = append(n.skills, s)
		}
	}
	return n
}
