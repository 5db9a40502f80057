package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// InlineRoot is the root ID of the Skills a deployment gives inline
// (options.skills.inline): their qualified names are inline/NAME, so no
// configured root may use this ID alongside them.
const InlineRoot = "inline"

// Inline is a Skill given in the deployment (options.skills.inline.NAME)
// instead of a package directory. It is rendered to the frontmatter a
// SKILL.md would hold and read through the same strict walk, so it obeys
// the same name rules, size limits and field checks; its instructions obey
// the SKILL.md body's. It has no files: skill.read finds nothing in it.
// Like every Skill's metadata its fields are inert and grant nothing.
type Inline struct {
	Description   string   `json:"description"`
	Instructions  string   `json:"instructions"`
	License       string   `json:"license,omitempty"`
	Compatibility string   `json:"compatibility,omitempty"`
	AllowedTools  []string `json:"allowed_tools,omitempty"`
	// Owner, Version, TaskKinds, CompatibleAdapters and Credentials are the
	// bundle fields (Bundle), kept as the metadata keys a SKILL.md writes.
	Owner              string   `json:"owner,omitempty"`
	Version            string   `json:"version,omitempty"`
	TaskKinds          []string `json:"task_kinds,omitempty"`
	CompatibleAdapters []string `json:"compatible_adapters,omitempty"`
	Credentials        []string `json:"credentials,omitempty"`
}

// quoted renders v as a YAML double-quoted scalar: JSON's string escapes
// are YAML's, so no value can break out of its scalar.
func quoted(v string) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// inlineWords joins a list field into the space-separated metadata value,
// refusing entries that are empty or would split.
func inlineWords(field string, v []string) (string, error) {
	for _, w := range v {
		if w == "" || strings.IndexFunc(w, unicode.IsSpace) >= 0 {
			return "", &Error{Kind: ErrInvalidFrontmatter, Code: CodeInvalidMetadata,
				Reason: fmt.Sprintf("%s entry %s must be one non-empty word", field, strconv.Quote(w))}
		}
	}
	return strings.Join(v, " "), nil
}

// inlineFrontmatter renders an inline Skill's frontmatter, delimiters
// included, as a SKILL.md would hold it.
func inlineFrontmatter(name string, in Inline) ([]byte, error) {
	var b strings.Builder
	b.WriteString("---\n")
	fmt.Fprintf(&b, "name: %s\n", quoted(name))
	fmt.Fprintf(&b, "description: %s\n", quoted(in.Description))
	if in.License != "" {
		fmt.Fprintf(&b, "license: %s\n", quoted(in.License))
	}
	if in.Compatibility != "" {
		fmt.Fprintf(&b, "compatibility: %s\n", quoted(in.Compatibility))
	}
	if len(in.AllowedTools) > 0 {
		b.WriteString("allowed-tools:\n")
		for _, t := range in.AllowedTools {
			fmt.Fprintf(&b, "  - %s\n", quoted(t))
		}
	}
	meta := map[string]string{MetadataOwner: in.Owner, MetadataVersion: in.Version}
	for _, l := range []struct {
		key, field string
		v          []string
	}{
		{MetadataTaskKinds, "task_kinds", in.TaskKinds},
		{MetadataCompatibleAdapters, "compatible_adapters", in.CompatibleAdapters},
		{MetadataCredentials, "credentials", in.Credentials},
	} {
		w, err := inlineWords(l.field, l.v)
		if err != nil {
			return nil, err
		}
		meta[l.key] = w
	}
	keys := make([]string, 0, len(meta))
	for k, v := range meta {
		if v != "" {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		slices.Sort(keys)
		b.WriteString("metadata:\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s: %s\n", k, quoted(meta[k]))
		}
	}
	b.WriteString("---\n")
	if b.Len() > MaxFrontmatterBytes {
		return nil, tooLarge()
	}
	return []byte(b.String()), nil
}

// checkInline validates one inline Skill and returns its catalog entry.
func checkInline(name string, in Inline) (Skill, error) {
	if reason := nameProblem(name); reason != "" {
		return Skill{}, &Error{Kind: ErrInvalidFrontmatter, Code: CodeInvalidName, Reason: reason}
	}
	strs := append([]string{in.Description, in.Instructions, in.License, in.Compatibility, in.Owner, in.Version}, in.AllowedTools...)
	strs = append(append(append(strs, in.TaskKinds...), in.CompatibleAdapters...), in.Credentials...)
	for _, s := range strs {
		if !utf8.ValidString(s) {
			return Skill{}, &Error{Kind: ErrEncoding, Code: CodeInvalidEncoding, Reason: "a field is not valid UTF-8"}
		}
	}
	switch {
	case strings.TrimSpace(in.Instructions) == "":
		return Skill{}, &Error{Kind: ErrInvalidFrontmatter, Code: CodeMissingField,
			Reason: "instructions must not be empty; they are what activation gives the model"}
	case len(in.Instructions) > MaxInstructionBytes:
		return Skill{}, &Error{Kind: ErrLimitExceeded, Code: CodeTooLarge,
			Reason: fmt.Sprintf("instructions exceed %d bytes; use a Skill package with resources instead", MaxInstructionBytes)}
	}
	raw, err := inlineFrontmatter(name, in)
	if err != nil {
		return Skill{}, err
	}
	fm, err := decodeFrontmatter(raw)
	if err != nil {
		return Skill{}, err
	}
	sum := sha256.Sum256(raw)
	return Skill{
		QualifiedName:  InlineRoot + "/" + name,
		Root:           InlineRoot,
		Frontmatter:    fm,
		RelativePath:   "options.skills.inline." + name,
		MetadataSHA256: hex.EncodeToString(sum[:]),
		CatalogBytes:   len(raw),
	}, nil
}

// inline admits the options' inline Skills, each broken one a finding.
func (d *discoverer) inline(opts Options) error {
	if len(opts.Inline) == 0 {
		return nil
	}
	if opts.Contained != nil && !opts.Contained(InlineRoot, "") {
		const reason = "an authority layer bounds skill_roots, and inline Skills lie in no physical root; remove options.skills.inline or the layer's skill_roots"
		d.finding(InlineRoot, "", CodeRootDenied, reason)
		if d.cat.refused == nil {
			d.cat.refused = map[string]error{}
		}
		for name := range opts.Inline {
			qn := InlineRoot + "/" + name
			d.cat.refused[qn] = &Error{Kind: ErrNotFound, Code: CodeRootDenied, Skill: qn, Reason: reason}
		}
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Inline)) {
		s, err := checkInline(name, opts.Inline[name])
		if err != nil {
			d.findingOf(InlineRoot, name, err)
			continue
		}
		d.metaSize += s.CatalogBytes
		if d.metaSize > d.lim.metadataBytes {
			return &Error{Kind: ErrLimitExceeded, Code: CodeLimitExceeded,
				Reason: fmt.Sprintf("the Skills hold more than %d bytes of frontmatter; remove Skills or roots", d.lim.metadataBytes)}
		}
		if d.cat.inline == nil {
			d.cat.inline = map[string]string{}
		}
		d.cat.inline[s.QualifiedName] = opts.Inline[name].Instructions
		d.cat.skills = append(d.cat.skills, s)
	}
	return nil
}
