package fstools

import "github.com/pabloagent/pablo/authority"

// Spec describes one tool to a model: its capability ID, a description and
// its closed Draft 2020-12 JSON Schema.
type Spec struct {
	ID          authority.ID
	Description string
	// Schema is the arguments' JSON Schema text: an object with
	// additionalProperties false and its required members.
	Schema string
}

// The argument schemas. The engine validates arguments against them before
// Call, and Call decodes strictly again. Byte bounds (path ≤ 4096 bytes,
// query ≤ 4096 bytes) are enforced in code, since JSON Schema counts
// codepoints.
const (
	ReadSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,` +
		`"required":["path"],"properties":{` +
		`"path":{"type":"string","minLength":1,"maxLength":4096,"description":"Workspace-relative path of a UTF-8 text file."},` +
		`"offset":{"type":"integer","minimum":0,"maximum":9007199254740991,"description":"Byte offset of the page, on a codepoint boundary. Default 0."},` +
		`"max_bytes":{"type":"integer","minimum":1,"maximum":9007199254740991,"description":"Most bytes returned. Default 65536."},` +
		commonProps + `}}`

	ListSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,` +
		`"required":["path"],"properties":{` +
		`"path":{"type":"string","minLength":1,"maxLength":4096,"description":"Workspace-relative directory; \".\" is the workspace."},` +
		`"offset":{"type":"integer","minimum":0,"maximum":9007199254740991,"description":"Index of the first entry. Default 0."},` +
		`"max_entries":{"type":"integer","minimum":1,"maximum":9007199254740991,"description":"Most entries returned. Default 1000."},` +
		commonProps + `}}`

	SearchSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,` +
		`"required":["path","query"],"properties":{` +
		`"path":{"type":"string","minLength":1,"maxLength":4096,"description":"Workspace-relative directory searched recursively."},` +
		`"query":{"type":"string","minLength":1,"maxLength":4096,"description":"Case-sensitive literal text; no line breaks."},` +
		`"max_matches":{"type":"integer","minimum":1,"maximum":9007199254740991,"description":"Most matching lines returned. Default 100."},` +
		commonProps + `}}`

	WriteSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,` +
		`"required":["path","text","expected_revision"],"properties":{` +
		`"path":{"type":"string","minLength":1,"maxLength":4096,"description":"Workspace-relative file path; the parent directory must exist."},` +
		`"text":{"type":"string","description":"The complete new UTF-8 content."},` +
		`"expected_revision":{"type":["string","null"],"minLength":64,"maxLength":64,"description":"null to create a new file only; otherwise the revision from fs.read, to replace only if unchanged."},` +
		commonProps + `}}`

	EditSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,` +
		`"required":["path","expected_revision","old_text","new_text"],"properties":{` +
		`"path":{"type":"string","minLength":1,"maxLength":4096,"description":"Workspace-relative path of an existing file."},` +
		`"expected_revision":{"type":"string","minLength":64,"maxLength":64,"description":"The revision from fs.read; the edit applies only if the file is unchanged."},` +
		`"old_text":{"type":"string","minLength":1,"description":"Literal text that occurs exactly once in the file."},` +
		`"new_text":{"type":"string","description":"Replacement text."},` +
		commonProps + `}}`

	commonProps = `"timeout_ms":{"type":"integer","minimum":1,"maximum":9007199254740991,"description":"Narrows the tool's time limit, in milliseconds."},` +
		`"max_output_bytes":{"type":"integer","minimum":1024,"maximum":9007199254740991,"description":"Narrows the size limit of the serialized result."}`
)

// The descriptions shown to models.
const (
	ReadDescription = "Read a UTF-8 text file in the workspace. Returns a page of text starting at offset, " +
		"next_offset for the following page (null at the end) and revision, the SHA-256 of the whole file; " +
		"pass the revision to fs.write or fs.edit."
	ListDescription = "List the direct entries of a workspace directory, sorted by name, " +
		"each with its type (file, directory, symlink or other)."
	SearchDescription = "Search files under a workspace directory, recursively, for lines containing a " +
		"case-sensitive literal. Binary files and symlinks are skipped. Returns path, 1-based line and line text."
	WriteDescription = "Create or replace a workspace file with complete text. Use expected_revision null to create " +
		"a new file; to replace, pass the revision from fs.read. Parent directories must exist."
	EditDescription = "Replace exactly one occurrence of old_text with new_text in a workspace file, " +
		"if the file still has expected_revision (from fs.read)."
)

// SpecOf returns the Spec of a workspace tool, or false for any other ID.
func SpecOf(id authority.ID) (Spec, bool) {
	switch id {
	case authority.FSRead:
		return Spec{ID: id, Description: ReadDescription, Schema: ReadSchema}, true
	case authority.FSList:
		return Spec{ID: id, Description: ListDescription, Schema: ListSchema}, true
	case authority.FSSearch:
		return Spec{ID: id, Description: SearchDescription, Schema: SearchSchema}, true
	case authority.FSWrite:
		return Spec{ID: id, Description: WriteDescription, Schema: WriteSchema}, true
	case authority.FSEdit:
		return Spec{ID: id, Description: EditDescription, Schema: EditSchema}, true
	}
	return Spec{}, false
}

// Specs returns the specs of this agent's tools in catalog order: the three
// read tools, then fs.write and fs.edit when writing is enabled.
func (t *Tools) Specs() []Spec {
	ids := []authority.ID{authority.FSRead, authority.FSList, authority.FSSearch}
	if t.write {
		ids = append(ids, authority.FSWrite, authority.FSEdit)
	}
	out := make([]Spec, 0, len(ids))
	for _, id := range ids {
		s, _ := SpecOf(id)
		out = append(out, s)
	}
	return out
}
