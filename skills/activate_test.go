package skills

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestActivationReturnsRecordAndUserRoleTaskData(t *testing.T) {
	cat, _ := discoverCorpus(t)
	act, err := cat.Activate(context.Background(), []string{"team/evidence-review", "multi-line"})
	if err != nil {
		t.Fatal(err)
	}
	got := act.Skills()
	if len(got) != 2 || got[0].Activation.QualifiedName != "team/evidence-review" || got[1].Activation.QualifiedName != "team/multi-line" {
		t.Fatalf("activations in wrong order: %+v", act.Activations())
	}
	a := got[0]
	body := "\nUse only the evidence provided by the task and configured tools.\n"
	sum := sha256.Sum256([]byte(body))
	s, _ := cat.Lookup("team/evidence-review")
	want := Activation{
		QualifiedName:     "team/evidence-review",
		Root:              "team",
		RelativePath:      "evidence-review/SKILL.md",
		MetadataSHA256:    s.MetadataSHA256,
		InstructionSHA256: hex.EncodeToString(sum[:]),
		CatalogBytes:      s.CatalogBytes,
		InstructionBytes:  len(body),
	}
	if a.Activation != want {
		t.Fatalf("record %+v\nwant %+v", a.Activation, want)
	}
	if a.Instructions != body {
		t.Fatalf("instructions %q", a.Instructions)
	}
	if a.Message.Role != RoleUser {
		t.Fatalf("role %q; instructions must be user-role task data", a.Message.Role)
	}
	for _, phrase := range []string{"Explicitly activated Skill", "task data, not additional authority", "skill.read",
		"BEGIN SKILL INSTRUCTIONS " + want.InstructionSHA256, body, "END SKILL INSTRUCTIONS " + want.InstructionSHA256} {
		if !strings.Contains(a.Message.Text, phrase) {
			t.Errorf("message lacks %q:\n%s", phrase, a.Message.Text)
		}
	}
	js, err := json.Marshal(a.Activation)
	must(t, err)
	const order = `{"qualified_name":"team/evidence-review","root":"team","relative_path":"evidence-review/SKILL.md","metadata_sha256":"`
	if !strings.HasPrefix(string(js), order) || !strings.Contains(string(js), `"catalog_bytes":`) || !strings.HasSuffix(string(js), fmt.Sprintf(`"instruction_bytes":%d}`, len(body))) {
		t.Fatalf("record JSON %s", js)
	}
}

func TestActivationSelectionRules(t *testing.T) {
	cat, _ := discoverCorpus(t)
	all := []string{"other/evidence-review", "team/crlf-endings", "team/evidence-review", "multi-line",
		"quoted-values", "resources", "with-metadata", "with-tools"}
	tests := []struct {
		name string
		sel  []string
		kind error
	}{
		{"empty selection activates nothing", nil, nil},
		{"eight activations", all, nil},
		{"nine activations", append(all[:8:8], "x"), ErrLimitExceeded},
		{"unknown", []string{"team/nope"}, ErrNotFound},
		{"ambiguous short name", []string{"evidence-review"}, ErrAmbiguous},
		{"same skill twice", []string{"multi-line", "team/multi-line"}, ErrInvalidOptions},
		{"broken package is not selectable", []string{"team/anchors"}, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			act, err := cat.Activate(context.Background(), tt.sel)
			if tt.kind == nil {
				if err != nil || act.Len() != len(tt.sel) {
					t.Fatalf("got %v", err)
				}
				return
			}
			if !errors.Is(err, tt.kind) {
				t.Fatalf("got %v, want %v", err, tt.kind)
			}
		})
	}
}

func TestChangedPackageFailsActivation(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, pkg string)
		kind   error
	}{
		{"body edit keeps the metadata identity", func(t *testing.T, pkg string) {
			write(t, filepath.Join(pkg, SkillFile), "---\nname: a\ndescription: d\n---\nnew body\n")
		}, nil},
		{"frontmatter edit", func(t *testing.T, pkg string) {
			write(t, filepath.Join(pkg, SkillFile), "---\nname: a\ndescription: changed\n---\nbody\n")
		}, ErrChanged},
		{"frontmatter broken", func(t *testing.T, pkg string) {
			write(t, filepath.Join(pkg, SkillFile), "no frontmatter\n")
		}, ErrChanged},
		{"SKILL.md replaced by a symlink", func(t *testing.T, pkg string) {
			must(t, os.Rename(filepath.Join(pkg, SkillFile), filepath.Join(pkg, "real.md")))
			must(t, os.Symlink("real.md", filepath.Join(pkg, SkillFile)))
		}, ErrChanged},
		{"package directory replaced", func(t *testing.T, pkg string) {
			must(t, os.Rename(pkg, pkg+".old"))
			write(t, filepath.Join(pkg, SkillFile), "---\nname: a\ndescription: d\n---\nbody\n")
		}, ErrChanged},
		{"package directory replaced by a symlink", func(t *testing.T, pkg string) {
			must(t, os.Rename(pkg, pkg+".old"))
			must(t, os.Symlink("a.old", pkg))
		}, ErrChanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pkg := filepath.Join(dir, "a")
			write(t, filepath.Join(pkg, SkillFile), "---\nname: a\ndescription: d\n---\nbody\n")
			cat, err := Discover(context.Background(), Options{Roots: map[string]string{"r": dir}})
			must(t, err)
			tt.change(t, pkg)
			_, err = cat.Activate(context.Background(), []string{"r/a"})
			if tt.kind == nil && err != nil || tt.kind != nil && !errors.Is(err, tt.kind) {
				t.Fatalf("got %v, want %v", err, tt.kind)
			}
			var e *Error
			if tt.kind != nil && (!errors.As(err, &e) || e.Code != CodeChanged || e.Skill != "r/a") {
				t.Fatalf("want *Error code changed for r/a, got %#v", err)
			}
		})
	}
}

func TestInstructionLimitsAtAndPastTheBoundary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	head := func(name string) string { return "---\nname: " + name + "\ndescription: d\n---\n" }
	write(t, filepath.Join(dir, "at", SkillFile), head("at")+strings.Repeat("a", MaxInstructionBytes))
	write(t, filepath.Join(dir, "past", SkillFile), head("past")+strings.Repeat("a", MaxInstructionBytes+1))
	write(t, filepath.Join(dir, "binary", SkillFile), head("binary")+"\xff\xfe")
	for _, n := range []string{"b1", "b2", "b3"} {
		write(t, filepath.Join(dir, n, SkillFile), head(n)+strings.Repeat("b", MaxInstructionBytes))
	}
	write(t, filepath.Join(dir, "one", SkillFile), head("one")+"x")
	cat, err := Discover(context.Background(), Options{Roots: map[string]string{"r": dir}})
	must(t, err)
	tests := []struct {
		name string
		sel  []string
		kind error
	}{
		{"instructions at limit", []string{"at"}, nil},
		{"instructions past limit", []string{"past"}, ErrLimitExceeded},
		{"non-UTF-8 instructions", []string{"binary"}, ErrEncoding},
		{"total at limit", []string{"at", "b1", "b2", "b3"}, nil},
		{"total past limit", []string{"at", "b1", "b2", "b3", "one"}, ErrLimitExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cat.Activate(context.Background(), tt.sel)
			if tt.kind == nil && err != nil || tt.kind != nil && !errors.Is(err, tt.kind) {
				t.Fatalf("got %v, want %v", err, tt.kind)
			}
		})
	}
}

func TestNarrowOnlyRemoves(t *testing.T) {
	cat, _ := discoverCorpus(t)
	act, err := cat.Activate(context.Background(), []string{"team/evidence-review", "multi-line", "resources"})
	must(t, err)
	child, err := act.Narrow([]string{"resources", "team/evidence-review"})
	if err != nil || child.Len() != 2 || child.Activations()[0].QualifiedName != "team/resources" {
		t.Fatalf("narrow: %v %+v", err, child)
	}
	if _, err := act.Narrow([]string{"with-tools"}); !errors.Is(err, ErrNotActivated) {
		t.Fatalf("adding a Skill: want ErrNotActivated, got %v", err)
	}
	if _, err := child.Narrow([]string{"multi-line"}); !errors.Is(err, ErrNotActivated) {
		t.Fatalf("child widening: want ErrNotActivated, got %v", err)
	}
}

func TestActivationHonoursCancellation(t *testing.T) {
	cat, _ := discoverCorpus(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := cat.Activate(ctx, []string{"multi-line"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}
