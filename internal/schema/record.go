package schema

// RecordVersion is the schema_version of a validation Record.
const RecordVersion = "output-validation-v1"

// Status is a Record's validation status.
type Status string

// Record statuses.
const (
	// StatusUnvalidated: a schema was configured but no answer was checked.
	StatusUnvalidated Status = "unvalidated"
	// StatusValid: the answer satisfied the schema.
	StatusValid Status = "valid"
	// StatusInvalid: the answer failed; Diagnostics has at least one entry.
	StatusInvalid Status = "invalid"
)

// Record is the reference's output-validation-v1 record, as carried by a
// task envelope and by inline handoffs.
type Record struct {
	SchemaVersion string       `json:"schema_version"`
	SchemaSHA256  string       `json:"schema_sha256"`
	Status        Status       `json:"status"`
	Diagnostics   []Diagnostic `json:"diagnostics"`
}

// Record returns the output-validation-v1 record of r against s.
func (s *Schema) Record(r Result) Record {
	rec := Record{SchemaVersion: RecordVersion, SchemaSHA256: s.digest, Status: StatusValid, Diagnostics: []Diagnostic{}}
	if !r.Valid {
		rec.Status = StatusInvalid
		rec.Diagnostics = append(rec.Diagnostics, r.Diagnostics...)
	}
	return rec
}

// UnvalidatedRecord returns the record for a schema that was configured but
// not applied (for example, the task ended before an answer).
func (s *Schema) UnvalidatedRecord() Record {
	return Record{SchemaVersion: RecordVersion, SchemaSHA256: s.digest, Status: StatusUnvalidated, Diagnostics: []Diagnostic{}}
}
