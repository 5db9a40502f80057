package skills

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func activeCorpus(t *testing.T) (*Active, string) {
	t.Helper()
	opts, _ := corpus(t)
	cat, err := Discover(context.Background(), opts)
	must(t, err)
	act, err := cat.Activate(context.Background(), []string{"team/resources", "multi-line"})
	must(t, err)
	return act, opts.Roots["team"]
}

func intp(n int) *int { return &n }

func TestReadReturnsWholeUTF8Resource(t *testing.T) {
	act, _ := activeCorpus(t)
	res, err := act.Read(context.Background(), ReadArguments{Skill: "team/resources", Path: "references/guide.md"}, ReadOptions{})
	must(t, err)
	text := "# Guide\n\nStep one.\n"
	sum := sha256.Sum256([]byte(text))
	want := Resource{QualifiedName: "team/resources", Path: "references/guide.md", SHA256: hex.EncodeToString(sum[:]), Bytes: len(text), Text: text}
	if res != want {
		t.Fatalf("got %+v\nwant %+v", res, want)
	}
	js, err := json.Marshal(res)
	must(t, err)
	if !strings.HasPrefix(string(js), `{"qualified_name":"team/resources","path":"references/guide.md","sha256":"`) {
		t.Fatalf("JSON %s", js)
	}
	// A script is returned as text; nothing runs it.
	res, err = act.Read(context.Background(), ReadArguments{Skill: "team/resources", Path: "scripts/run.sh"}, ReadOptions{})
	if err != nil || !strings.Contains(res.Text, "never executed") {
		t.Fatalf("script read: %v", err)
	}
}

func TestReadRejections(t *testing.T) {
	act, team := activeCorpus(t)
	must(t, os.WriteFile(filepath.Join(team, "resources", "big.md"), []byte(strings.Repeat("x", 100)), 0o644))
	tests := []struct {
		name string
		args ReadArguments
		opts ReadOptions
		kind error
		code Code
	}{
		{"not activated", ReadArguments{Skill: "team/with-tools", Path: "SKILL.md"}, ReadOptions{}, ErrNotActivated, CodeNotActivated},
		{"short name", ReadArguments{Skill: "resources", Path: "SKILL.md"}, ReadOptions{}, ErrInvalidArguments, CodeInvalidArguments},
		{"dot dot", ReadArguments{Skill: "team/resources", Path: "../evidence-review/SKILL.md"}, ReadOptions{}, ErrInvalidArguments, CodeInvalidPath},
		{"inner dot dot", ReadArguments{Skill: "team/resources", Path: "references/../SKILL.md"}, ReadOptions{}, ErrInvalidArguments, CodeInvalidPath},
		{"absolute", ReadArguments{Skill: "team/resources", Path: "/etc/passwd"}, ReadOptions{}, ErrInvalidArguments, CodeInvalidPath},
		{"backslash", ReadArguments{Skill: "team/resources", Path: `references\guide.md`}, ReadOptions{}, ErrInvalidArguments, CodeInvalidPath},
		{"NUL", ReadArguments{Skill: "team/resources", Path: "SKILL.md\x00"}, ReadOptions{}, ErrInvalidArguments, CodeInvalidPath},
		{"dot component", ReadArguments{Skill: "team/resources", Path: "./SKILL.md"}, ReadOptions{}, ErrInvalidArguments, CodeInvalidPath},
		{"empty component", ReadArguments{Skill: "team/resources", Path: "references//guide.md"}, ReadOptions{}, ErrInvalidArguments, CodeInvalidPath},
		{"path past 4096 bytes", ReadArguments{Skill: "team/resources", Path: strings.Repeat("a", MaxReadPathBytes+1)}, ReadOptions{}, ErrInvalidArguments, CodeInvalidPath},
		{"path at 4096 bytes is only missing", ReadArguments{Skill: "team/resources", Path: strings.Repeat("a/", MaxReadPathBytes/2-1) + "aa"}, ReadOptions{}, ErrNotFound, CodeNotFound},
		{"missing", ReadArguments{Skill: "team/resources", Path: "references/none.md"}, ReadOptions{}, ErrNotFound, CodeNotFound},
		{"symlinked file", ReadArguments{Skill: "team/resources", Path: "references/link.md"}, ReadOptions{}, ErrUnsafePath, CodeSymlink},
		{"symlinked directory", ReadArguments{Skill: "team/resources", Path: "linkdir/guide.md"}, ReadOptions{}, ErrUnsafePath, CodeSymlink},
		{"directory", ReadArguments{Skill: "team/resources", Path: "references"}, ReadOptions{}, ErrUnsafePath, CodeNotFile},
		{"file as directory", ReadArguments{Skill: "team/resources", Path: "SKILL.md/x"}, ReadOptions{}, ErrNotFound, CodeNotFound},
		{"binary", ReadArguments{Skill: "team/resources", Path: "assets/blob.bin"}, ReadOptions{}, ErrEncoding, CodeUnsupportedEncoding},
		{"max_bytes one under size", ReadArguments{Skill: "team/resources", Path: "big.md", MaxBytes: intp(99)}, ReadOptions{}, ErrLimitExceeded, CodeTooLarge},
		{"host cap one under size", ReadArguments{Skill: "team/resources", Path: "big.md"}, ReadOptions{MaxBytes: 99}, ErrLimitExceeded, CodeTooLarge},
		{"max_bytes zero", ReadArguments{Skill: "team/resources", Path: "big.md", MaxBytes: intp(0)}, ReadOptions{}, ErrInvalidArguments, CodeInvalidArguments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := act.Read(context.Background(), tt.args, tt.opts)
			if !errors.Is(err, tt.kind) || CodeOf(err) != tt.code {
				t.Fatalf("got %v (code %s), want %v / %s", err, CodeOf(err), tt.kind, tt.code)
			}
		})
	}
	for _, limit := range []ReadOptions{{MaxBytes: 100}, {}} {
		res, err := act.Read(context.Background(), ReadArguments{Skill: "team/resources", Path: "big.md", MaxBytes: intp(100)}, limit)
		if err != nil || res.Bytes != 100 {
			t.Fatalf("exactly at the limit: %v", err)
		}
	}
}

func TestParseReadArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
		ok   bool
	}{
		{"minimal", `{"skill":"r/a","path":"x.md"}`, true},
		{"with max_bytes", `{"skill":"r/a","path":"x.md","max_bytes":1048576}`, true},
		{"max_bytes past limit", `{"skill":"r/a","path":"x.md","max_bytes":1048577}`, false},
		{"max_bytes zero", `{"skill":"r/a","path":"x.md","max_bytes":0}`, false},
		{"max_bytes fractional", `{"skill":"r/a","path":"x.md","max_bytes":1.5}`, false},
		{"unknown field", `{"skill":"r/a","path":"x.md","mode":"x"}`, false},
		{"wrong type", `{"skill":1,"path":"x.md"}`, false},
		{"missing path", `{"skill":"r/a"}`, false},
		{"skill at 128 bytes", `{"skill":"` + strings.Repeat("s", 128) + `","path":"x"}`, true},
		{"skill past 128 bytes", `{"skill":"` + strings.Repeat("s", 129) + `","path":"x"}`, false},
		{"escaped NUL", `{"skill":"r/a","path":"x\u0000"}`, false},
		{"trailing data", `{"skill":"r/a","path":"x"} {}`, false},
		{"not an object", `["r/a"]`, false},
		{"field names are exact", `{"Skill":"r/a","path":"x"}`, false},
		{"null max_bytes", `{"skill":"r/a","path":"x","max_bytes":null}`, false},
		{"literal backslash-u is not NUL", `{"skill":"r/\\u0000","path":"x"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseReadArguments([]byte(tt.raw))
			if tt.ok != (err == nil) {
				t.Fatalf("got %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidArguments) {
				t.Fatalf("want ErrInvalidArguments, got %v", err)
			}
		})
	}
}

func TestReadArgumentsSchemaIsClosed(t *testing.T) {
	t.Parallel()
	var s jsonschema.Schema
	must(t, json.Unmarshal([]byte(ReadArgumentsSchema), &s))
	rs, err := s.Resolve(nil)
	must(t, err)
	valid := map[string]any{"skill": "r/a", "path": "x.md", "max_bytes": 10}
	if err := rs.Validate(valid); err != nil {
		t.Fatalf("valid arguments rejected: %v", err)
	}
	for _, bad := range []map[string]any{
		{"skill": "r/a", "path": "x.md", "extra": true},
		{"skill": "r/a"},
		{"skill": "", "path": "x"},
		{"skill": "r/a", "path": "x", "max_bytes": 0},
	} {
		if err := rs.Validate(bad); err == nil {
			t.Errorf("schema accepted %v", bad)
		}
	}
}
