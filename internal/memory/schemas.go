package memory

// The tools' descriptions and argument schemas, as the model sees them.

const pageProps = `"cursor": {"type": "integer", "minimum": 0, "maximum": 1000000, "description": "Offset of the first result: a previous page's next_cursor."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Page size (default 20)."}`

const recordSchema = `{
      "type": "object",
      "additionalProperties": false,
      "required": ["id"],
      "properties": {
        "id": {"type": "string", "minLength": 1, "maxLength": 256},
        "kind": {"type": "string", "maxLength": 128},
        "owner": {"type": "string", "maxLength": 256},
        "repo": {"type": "string", "maxLength": 256},
        "stack": {"type": "string", "maxLength": 256},
        "associations": {"type": "array", "maxItems": 64, "items": {"type": "string", "maxLength": 256}},
        "edges": {"type": "array", "maxItems": 64, "items": {"type": "object", "additionalProperties": false, "required": ["kind", "to"],
          "properties": {"kind": {"type": "string", "maxLength": 128}, "to": {"type": "string", "maxLength": 256}}}},
        "fields": {"type": "object", "maxProperties": 64},
        "body": {"type": "string", "maxLength": 65536},
        "path": {"type": "string", "maxLength": 1024}
      }
    }`

const changesSchema = `{
      "type": "array",
      "minItems": 1,
      "maxItems": 100,
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["op", "record"],
        "properties": {
          "op": {"type": "string", "enum": ["add", "edit", "delete"]},
          "record": ` + recordSchema + `
        }
      }
    }`

func allSpecs() []Spec {
	return []Spec{
		{ToolSearch, "Search the company memory graph at the task's pinned commit: records by text, kind, edge (kind and target), owner, repo, stack or association. Paged; records outside your grant do not exist here.", `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "text": {"type": "string", "maxLength": 512, "description": "Words that must all occur (case-insensitive)."},
    "kind": {"type": "string", "maxLength": 128},
    "edge_kind": {"type": "string", "maxLength": 128},
    "edge_to": {"type": "string", "maxLength": 256, "description": "A record ID an edge points at."},
    "owner": {"type": "string", "maxLength": 256},
    "repo": {"type": "string", "maxLength": 256},
    "stack": {"type": "string", "maxLength": 256},
    "association": {"type": "string", "maxLength": 256, "description": "A record ID the record is associated with."},
    ` + pageProps + `
  }
}`},
		{ToolRead, "Read one memory record (frontmatter and body) by id or repository path, or one docs file by path, at the task's pinned commit.", `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "id": {"type": "string", "minLength": 1, "maxLength": 256},
    "path": {"type": "string", "minLength": 1, "maxLength": 1024}
  }
}`},
		{ToolGrep, "Search the memory's free-form Markdown docs at the pinned commit for a literal string or an RE2 pattern; matches carry path, line and revision. Paged.", `{
  "type": "object",
  "additionalProperties": false,
  "required": ["pattern"],
  "properties": {
    "pattern": {"type": "string", "minLength": 1, "maxLength": 512},
    "regexp": {"type": "boolean", "description": "Read pattern as RE2 (default: a literal)."},
    "ignore_case": {"type": "boolean"},
    "paths": {"type": "array", "maxItems": 16, "items": {"type": "string", "maxLength": 1024}, "description": "Directory prefixes or files to narrow to."},
    ` + pageProps + `
  }
}`},
		{ToolDiff, "Compare the task's pinned memory with the current ref (against = \"current\", the default) or another ref: changed records and docs, summarized and paged. Reading beyond the pin may need an approval.", `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "against": {"type": "string", "maxLength": 256, "description": "\"current\" or a full ref name (refs/heads/...) or commit ID."},
    ` + pageProps + `
  }
}`},
		{ToolPropose, "Propose a change to the memory (records to add, edit or delete) as a git format-patch file written in the workspace, with its SHA-256. Nothing is written to the memory repository.", `{
  "type": "object",
  "additionalProperties": false,
  "required": ["subject", "changes"],
  "properties": {
    "subject": {"type": "string", "minLength": 1, "maxLength": 200},
    "changes": ` + changesSchema + `
  }
}`},
		{ToolValidate, "Validate proposed record changes, or a proposed patch in the workspace (memory.update.propose's path), against the memory ontology at the pinned commit: kinds, required fields, edge kinds, dangling edges, ID collisions. Give changes or patch.", `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "changes": ` + changesSchema + `,
    "patch": {"type": "string", "minLength": 1, "maxLength": 1024, "description": "Workspace-relative path of a patch to validate."}
  }
}`},
	}
}
