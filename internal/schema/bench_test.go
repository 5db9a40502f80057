package schema

import "testing"

// toolSchema is a typical native tool-argument schema (shaped like
// shell.run's arguments).
const toolSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "maxLength": 65536, "description": "Shell command"},
    "cwd": {"type": "string", "maxLength": 4096},
    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 86400000},
    "max_output_bytes": {"type": "integer", "minimum": 1},
    "env": {
      "type": "object",
      "propertyNames": {"minLength": 12, "maxLength": 64},
      "additionalProperties": {"type": "string", "maxLength": 4096},
      "maxProperties": 32
    },
    "mode": {"enum": ["capture", "stream"]}
  },
  "required": ["command"],
  "additionalProperties": false
}`

const toolArgs = `{"command":"wc -l README.md","cwd":".","timeout_ms":5000,"max_output_bytes":8192,"env":{"PABLO_TASK_LABEL":"docs"},"mode":"capture"}`

func BenchmarkCompileToolSchema(b *testing.B) {
	raw := []byte(toolSchema)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(raw, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateToolArgs(b *testing.B) {
	s := mustCompile(b, toolSchema)
	inst := []byte(toolArgs)
	b.ReportAllocs()
	b.SetBytes(int64(len(inst)))
	for b.Loop() {
		if r := s.Validate(inst); !r.Valid {
			b.Fatal(r.Diagnostics)
		}
	}
}

func BenchmarkValidateToolArgsInvalid(b *testing.B) {
	s := mustCompile(b, toolSchema)
	inst := []byte(`{"command":"","timeout_ms":0,"extra":1,"env":{"X":1}}`)
	b.ReportAllocs()
	for b.Loop() {
		if r := s.Validate(inst); r.Valid {
			b.Fatal("valid")
		}
	}
}

func BenchmarkCacheHitToolSchema(b *testing.B) {
	var c Cache
	raw := []byte(toolSchema)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Compile(raw); err != nil {
			b.Fatal(err)
		}
	}
}
