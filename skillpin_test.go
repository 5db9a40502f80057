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

// TestSkillPinnedByDigest: options.skills.pins pins a Skill package by
// digest. The right digest activates it; a package whose files differ is
// refused when the runtime is built, with a *skills.DigestError naming
// the expected and actual digests, and the graph denies its node with
// digest_mismatch; a malformed pin or key does not load.
func TestSkillPinnedByDigest(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	pkg := filepath.Join(dir, "skills", "review")
	os.MkdirAll(pkg, 0o700)
	os.WriteFile(filepath.Join(pkg, "SKILL.md"), []byte("---\nname: review\ndescription: Reviews.\n---\nReview.\n"), 0o600)
	want, err := skills.PackageDigest(pkg)
	if err != nil {
		t.Fatal(err)
	}
	load := func(pin string) *Deployment {
		return scriptDeployment(t, dir, ws, `{"turns":[{"text":["done"]}]}`, "[options.shell]\nenabled = false\n"+
			"[options.skills]\nroots = { team = { base = \"source\", path = \"skills\" } }\nactivate = [\"team/review\"]\npins = { \"team/review\" = \""+pin+"\" }\n")
	}
	rt, err := load(want).NewRuntime(context.Background(), HostOptions{})
	if err != nil {
		t.Fatalf("the right pin: %v", err)
	}
	rt.Close()
	os.WriteFile(filepath.Join(pkg, "extra.md"), []byte("swapped\n"), 0o600)
	d := load(want)
	_, err = d.NewRuntime(context.Background(), HostOptions{})
	var de *skills.DigestError
	if !errors.As(err, &de) || de.Expected != want || de.Actual == want || !strings.Contains(err.Error(), de.Actual) || !strings.Contains(err.Error(), want) {
		t.Fatalf("a changed package: %v", err)
	}
	g, err := d.Graph(context.Background(), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := g.Node("skill:team/review"); n.State != graph.Denied || len(n.Reasons) == 0 || n.Reasons[0].Code != "digest_mismatch" {
		t.Errorf("graph node: %+v", n)
	}
	for _, bad := range []string{"sha256:" + strings.Repeat("A", 64), "md5:00", strings.Repeat("a", 71)} {
		os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns":[]}`), 0o600)
		doc := "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n[options.skills]\nroots = { team = { base = \"source\", path = \"skills\" } }\npins = { \"team/review\" = \"" + bad + "\" }\n"
		os.WriteFile(filepath.Join(dir, "bad.toml"), []byte(doc), 0o600)
		if _, err := Load(LoadOptions{Config: filepath.Join(dir, "bad.toml"), Bindings: map[string]string{"workspace": ws}}); err == nil {
			t.Errorf("pin %q loaded", bad)
		}
	}
	doc := "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n[options.skills]\npins = { \"team/../review\" = \"" + want + "\" }\n"
	os.WriteFile(filepath.Join(dir, "bad.toml"), []byte(doc), 0o600)
	if _, err := Load(LoadOptions{Config: filepath.Join(dir, "bad.toml"), Bindings: map[string]string{"workspace": ws}}); err == nil {
		t.Error("a pin keyed team/../review loaded")
	}
}
