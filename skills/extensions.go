package skills

import (
	"encoding/json"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Skills written for other agents carry top-level keys the Agent Skills
// specification does not define. Refusing them would make a user's existing
// Skills folder fail to load, so the keys below are accepted as extensions:
// descriptive metadata kept as written (Frontmatter.Extensions) and reported
// by `pablo skills show`, which nothing in Pablo reads and which grant
// nothing. Every other unknown key is still an error.

// extensionShape is what the value of an extension key may be.
type extensionShape int

const (
	// extensionText is a string (`model: haiku`, `user-invocable: false`).
	extensionText extensionShape = iota
	// extensionTextOrList is a string or a list of strings
	// (`argument-hint: [issue-number]` is a one-entry flow list).
	extensionTextOrList
	// extensionTree is a nesting of mappings, lists and strings (`hooks`).
	extensionTree
)

// extensionKey is one accepted extension key.
type extensionKey struct {
	key   string
	shape extensionShape
}

// extensionTable lists the accepted extension keys, sorted, with the agent
// whose documented frontmatter defines each. It is returned
// by value so that no package-level table can be changed.
func extensionTable() [16]extensionKey {
	return [...]extensionKey{
		{"agent", extensionText},                    // Claude Code
		{"argument-hint", extensionTextOrList},      // Claude Code
		{"arguments", extensionTextOrList},          // Claude Code
		{"context", extensionText},                  // Claude Code
		{"disable-model-invocation", extensionText}, // Claude Code
		{"disallowed-tools", extensionTextOrList},   // Claude Code
		{"effort", extensionText},                   // Claude Code
		{"homepage", extensionText},                 // OpenClaw (ClawHub)
		{"hooks", extensionTree},                    // Claude Code
		{"model", extensionText},                    // Claude Code
		{"paths", extensionTextOrList},              // Claude Code
		{"shell", extensionText},                    // Claude Code
		{"triggers", extensionTextOrList},           // OpenHands
		{"user-invocable", extensionText},           // Claude Code
		{"version", extensionText},                  // OpenClaw (ClawHub)
		{"when_to_use", extensionText},              // Claude Code
	}
}

// ExtensionKeys returns, sorted, the top-level frontmatter keys of other
// agents' dialects that are accepted as inert extensions (see
// Frontmatter.Extensions): agent, argument-hint, arguments, context,
// disable-model-invocation, disallowed-tools, effort, hooks, model, paths,
// shell, user-invocable and when_to_use (Claude Code), triggers (OpenHands),
// and homepage and version (OpenClaw, whose runtime requirements under
// metadata.openclaw are extensions too). allowed-tools is a key of the
// specification itself.
func ExtensionKeys() []string {
	table := extensionTable()
	keys := make([]string, len(table))
	for i, k := range table {
		keys[i] = k.key
	}
	return keys
}

func extensionShapeOf(key string) (extensionShape, bool) {
	for _, k := range extensionTable() {
		if k.key == key {
			return k.shape, true
		}
	}
	return 0, false
}

// unknownKeyReason says why key is refused and what to do instead.
func unknownKeyReason(key string) string {
	return "unknown top-level key " + strconv.Quote(key) +
		"; allowed keys are name, description, license, compatibility, metadata and allowed-tools, and other agents' descriptive keys " +
		strings.Join(ExtensionKeys(), ", ") + "; put anything else under metadata"
}

// extension renders the value of extension key as JSON, every scalar a
// string, after checking it has the key's shape.
func (s *yamlSource) extension(e entry, shape extensionShape) (json.RawMessage, error) {
	n := e.Value
	switch {
	case shape == extensionText || n.Kind == yaml.ScalarNode:
		what := "a string"
		if shape != extensionText {
			what = "a string or a list of strings"
		}
		v, err := s.scalar(e.Key, n, what)
		if err != nil {
			return nil, err
		}
		if err := checkExtensionText(e.Key, v, e.Line); err != nil {
			return nil, err
		}
		return json.Marshal(v)
	case shape == extensionTextOrList && n.Kind == yaml.SequenceNode:
		items, err := s.list(e.Key, n)
		if err != nil {
			return nil, err
		}
		texts := make([]string, len(items))
		for i, it := range items {
			if err := checkExtensionText(e.Key, it.Text, it.Line); err != nil {
				return nil, err
			}
			texts[i] = it.Text
		}
		return json.Marshal(texts)
	case shape == extensionTextOrList:
		_, err := s.scalar(e.Key, n, "a string or a list of strings")
		return nil, err
	}
	var b strings.Builder
	if err := s.tree(e.Key, n, &b); err != nil {
		return nil, err
	}
	return json.RawMessage(b.String()), nil
}

// tree writes n as JSON, every scalar a string, mapping keys in written
// order.
func (s *yamlSource) tree(key string, n *yaml.Node, b *strings.Builder) error {
	if err := s.check(n); err != nil {
		return err
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if err := checkExtensionText(key, n.Value, s.fileLine(n.Line)); err != nil {
			return err
		}
		q, _ := json.Marshal(n.Value)
		b.Write(q)
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := s.tree(key, c, b); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		entries, err := s.mapping(n, nil)
		if err != nil {
			return err
		}
		b.WriteByte('{')
		for i, e := range entries {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := checkExtensionText(key, e.Key, e.Line); err != nil {
				return err
			}
			q, _ := json.Marshal(e.Key)
			b.Write(q)
			b.WriteByte(':')
			if err := s.tree(key, e.Value, b); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	}
	return nil
}

// checkExtensionText refuses control characters in an extension string, which
// `pablo skills show` prints.
func checkExtensionText(key, v string, line int) error {
	if hasControl(v) {
		return fieldErr(CodeInvalidExtension, line, "%s contains a control character", key)
	}
	return nil
}
