// Package config is the deployment language: it reads a deployment's TOML
// files (schema_version = 1), follows their imports, applies the selected
// profile, the declared environment bindings and the host's per-run
// overrides over the built-in defaults, checks every value and every
// cross-field rule, and produces one typed, resolved Deployment with a
// canonical JSON form, a sha256 Fingerprint, the provenance of every option
// and a self-contained rendering.
//
// The whole document is described by one spec tree (spec.go): strict
// decoding, merging, defaults and rendering share that definition. A
// document is pre-scanned in linear time before the TOML decoder sees it
// (prescan.go), then normalized against the spec (normalize.go); the
// loader composes the files (load.go, resolve.go) with the merge rules
// (merge.go), writes the conditional defaults (complete.go) and decodes
// the typed view, on which each cross-field rule is a small function
// (check.go, models.go, servers.go, credentials.go, authority.go,
// limits.go).
//
// Every failure is an *Error with a config_* Code, the JSON pointer of the
// option, the file and the line; errors.Is(err, ErrInvalid) holds for
// every one, and no message holds a secret value.
//
// The package sits above authority: it builds the rule values, the
// authority set and the credential resolver a deployment describes. The
// root package pablo wraps Deployment with the wiring that runs it.
package config
