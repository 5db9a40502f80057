package config

import (
	"context"
	"errors"
	"os"
)

// inlineOutputSchema pins a file-backed output schema as inline text so the
// fingerprint covers its bytes.
func (d *Deployment) inlineOutputSchema(ctx context.Context) error {
	out, _ := d.tree["options"].(map[string]any)["output"].(map[string]any)
	p, ok := out["schema"].(map[string]any)
	if !ok {
		return nil
	}
	ref := PathRef{Base: p["base"].(string), Path: p["path"].(string)}
	if n, ok := p["name"].(string); ok {
		ref.Name = n
	}
	const ptr = "/options/output/schema"
	if ref.Base == "workspace" {
		return invalid(ptr, "an output schema file cannot be relative to the workspace")
	}
	real, err := d.ResolvePath(ref)
	if err != nil {
		return invalid(ptr, "%s", err.Error())
	}
	raw, err := readBounded(ctx, real, maxStringBytes)
	if err != nil {
		if os.IsNotExist(err) {
			return invalid(ptr, "the schema file does not exist")
		}
		if ce := (*Error)(nil); errors.As(err, &ce) && ce.Unwrap() != nil {
			// Not a regular file, or the read was cancelled.
			return (&Error{Code: CodeInvalidValue, Option: ptr, Message: "the schema file: " + ce.Message}).WithCause(ce.Unwrap())
		}
		return invalid(ptr, "the schema file cannot be read within 65536 bytes")
	}
	out["schema"] = string(raw)
	return nil
}
