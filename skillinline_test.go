package pablo

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pabloagent/pablo/graph"
)

func TestInlineSkillIsActivatedFromTheDeployment(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	d := scriptDeployment(t, dir, ws, `{"turns":[{"text":["done"]}]}`, "[options.shell]\nenabled = false\n"+
		"[options.skills]\nactivate = [\"inline/triage\"]\n"+
		"[options.skills.inline.triage]\ndescription = \"Triage an issue.\"\ninstructions = \"Label it.\"\nowner = \"support\"\nversion = \"1.0.0\"\ntask_kinds = [\"triage\"]\n")
	rt, err := d.NewRuntime(context.Background(), HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	g, err := d.Graph(context.Background(), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := g.Node("skill:inline/triage"); !ok || n.State == graph.Denied {
		t.Fatalf("graph node: %+v (found %v)", n, ok)
	}
	for name, body := range map[string]string{
		"uppercase name":       "[options.skills.inline.Triage]\ndescription = \"d\"\ninstructions = \"i\"\n",
		"missing instructions": "[options.skills.inline.triage]\ndescription = \"d\"\n",
		"unknown field":        "[options.skills.inline.triage]\ndescription = \"d\"\ninstructions = \"i\"\nroots = \"x\"\n",
	} {
		os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns":[]}`), 0o600)
		doc := "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n" + body
		os.WriteFile(filepath.Join(dir, "bad.toml"), []byte(doc), 0o600)
		if _, err := Load(LoadOptions{Config: filepath.Join(dir, "bad.toml"), Bindings: map[string]string{"workspace": ws}}); err == nil {
			t.Errorf("%s loaded", name)
		}
	}
}
