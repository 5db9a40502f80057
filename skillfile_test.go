package pablo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/skills"
)

// TestSingleFileSkillIsActivatedFromTheDeployment: options.skills.files
// names a single file as a Skill, admitted as file/NAME and activated by a
// real runtime; its pin is checked like a package's; a missing file is a
// graph finding (source_missing), and a pin of an inline Skill says it is
// no package.
func TestSingleFileSkillIsActivatedFromTheDeployment(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.Mkdir(filepath.Join(dir, "notes"), 0o700)
	body := "---\nname: review\ndescription: Reviews a change.\n---\nReview it.\n"
	os.WriteFile(filepath.Join(dir, "notes", "review.md"), []byte(body), 0o600)
	digest, err := skills.FileDigest(filepath.Join(dir, "notes", "review.md"))
	if err != nil {
		t.Fatal(err)
	}
	load := func(extra string) *Deployment {
		return scriptDeployment(t, dir, ws, `{"turns":[{"text":["done"]}]}`, "[options.shell]\nenabled = false\n"+
			"[options.skills]\nactivate = [\"file/review\"]\nfiles = { review = { base = \"source\", path = \"notes/review.md\" } }\n"+extra)
	}
	d := load("pins = { \"file/review\" = \"" + digest + "\" }\n")
	rt, err := d.NewRuntime(context.Background(), HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	if got := d.Options().Skills.Files["review"]; got.Path != "notes/review.md" {
		t.Errorf("the options view: %+v", d.Options().Skills)
	}
	g, err := d.Graph(context.Background(), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := g.Node("skill:file/review"); !ok || n.State == graph.Denied || n.State == graph.Unsupported {
		t.Fatalf("graph node: %+v (found %v)", n, ok)
	}
	os.WriteFile(filepath.Join(dir, "notes", "review.md"), []byte(body+"More.\n"), 0o600)
	var de *skills.DigestError
	if _, err := d.NewRuntime(context.Background(), HostOptions{}); !errors.As(err, &de) {
		t.Fatalf("a changed file under its pin: %v", err)
	}
	os.Remove(filepath.Join(dir, "notes", "review.md"))
	d = load("")
	if _, err := d.NewRuntime(context.Background(), HostOptions{}); err == nil {
		t.Fatal("a missing file was activated")
	}
	g, err = d.Graph(context.Background(), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := g.Node("skill:file/review"); len(n.Reasons) == 0 || n.Reasons[0].Code != string(skills.CodeSourceMissing) {
		t.Errorf("graph node of a missing file: %+v", n)
	}
	d = scriptDeployment(t, dir, ws, `{"turns":[{"text":["done"]}]}`, "[options.shell]\nenabled = false\n"+
		"[options.skills]\nactivate = [\"inline/triage\"]\npins = { \"inline/triage\" = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\" }\n"+
		"[options.skills.inline.triage]\ndescription = \"d\"\ninstructions = \"i\"\n")
	if _, err := d.NewRuntime(context.Background(), HostOptions{}); !errors.Is(err, skills.ErrInvalidOptions) || !strings.Contains(err.Error(), "not a package") {
		t.Errorf("a pin of an inline Skill: %v", err)
	}
}
