package config

import (
	"bytes"

	toml "github.com/pelletier/go-toml/v2"
)

// Render returns a self-contained TOML document with the same meaning:
// schema_version first, then authority, credentials, deployment and options,
// every default written out. Bindings stay bindings; no private absolute path
// is written. Loading the result yields the same Fingerprint.
func (d *Deployment) Render() ([]byte, error) {
	type doc struct {
		SchemaVersion int64          `toml:"schema_version"`
		Authority     []any          `toml:"authority,omitempty"`
		Credentials   map[string]any `toml:"credentials"`
		Deployment    map[string]any `toml:"deployment"`
		Options       map[string]any `toml:"options"`
	}
	var buf bytes.Buffer
	buf.WriteString("# Rendered by pablo config render: every import, profile and default applied.\n")
	enc := toml.NewEncoder(&buf)
	enc.SetIndentTables(false)
	err := enc.Encode(doc{
		SchemaVersion: 1,
		Authority:     d.tree["authority"].([]any),
		Credentials:   d.tree["credentials"].(map[string]any),
		Deployment:    d.tree["deployment"].(map[string]any),
		Options:       d.tree["options"].(map[string]any),
	})
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
