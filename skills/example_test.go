package skills_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/pabloagent/pablo/skills"
)

// A host configures explicit roots, lists the catalog, activates one Skill
// and serves skill.read for it.
func Example() {
	dir, err := os.MkdirTemp("", "skills-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	pkg := filepath.Join(dir, "evidence-review")
	os.MkdirAll(filepath.Join(pkg, "references"), 0o755)
	os.WriteFile(filepath.Join(pkg, "SKILL.md"), []byte(`---
name: evidence-review
description: Review cited evidence and retain exact source references.
allowed-tools: fs.read
---
Use only the evidence provided by the task and configured tools.
`), 0o644)
	os.WriteFile(filepath.Join(pkg, "references", "checklist.md"), []byte("- cite the source\n"), 0o644)

	ctx := context.Background()
	cat, err := skills.Discover(ctx, skills.Options{Roots: map[string]string{"team": dir}})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range cat.Skills() {
		fmt.Println(s.QualifiedName, "-", s.Description)
	}

	active, err := cat.Activate(ctx, []string{"team/evidence-review"})
	if err != nil {
		log.Fatal(err)
	}
	a := active.Skills()[0]
	fmt.Println("role:", a.Message.Role, "instruction bytes:", a.Activation.InstructionBytes)

	// Declared tools are requirements, never grants.
	for _, f := range skills.Validate(a.Skill, func(id string) bool { return id == "fs.read" }, nil) {
		fmt.Println("finding:", f)
	}

	args, err := skills.ParseReadArguments([]byte(`{"skill":"team/evidence-review","path":"references/checklist.md"}`))
	if err != nil {
		log.Fatal(err)
	}
	res, err := active.Read(ctx, args, skills.ReadOptions{MaxBytes: 64 << 10})
	if err != nil {
		log.Fatal(err)
	}
	out, _ := json.Marshal(struct {
		Path  string `json:"path"`
		Bytes int    `json:"bytes"`
		Text  string `json:"text"`
	}{res.Path, res.Bytes, res.Text})
	fmt.Println(string(out))
	// Output:
	// team/evidence-review - Review cited evidence and retain exact source references.
	// role: user instruction bytes: 65
	// {"path":"references/checklist.md","bytes":18,"text":"- cite the source\n"}
}

// ParseFrontmatter checks one SKILL.md against the portable format.
func ExampleParseFrontmatter() {
	_, err := skills.ParseFrontmatter([]byte("---\nname: review\ndescription: &d Review.\n---\n"))
	fmt.Println(skills.CodeOf(err), err)
	// Output:
	// unsupported_yaml skills: line 3: YAML anchors are not supported
}

// A Skill written for Claude Code loads: its allowed-tools list becomes
// requirements and its other keys inert extensions, none of which grant
// anything.
func ExampleFrontmatter_extensions() {
	fm, err := skills.ParseFrontmatter([]byte(`---
name: commit-helper
description: Write a commit message for the staged changes.
allowed-tools:
  - Read
  - Bash(git diff --staged)
argument-hint: [scope]
disable-model-invocation: true
---
`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", fm.AllowedTools)
	for _, k := range []string{"argument-hint", "disable-model-invocation"} {
		fmt.Printf("%s: %s\n", k, fm.Extensions[k])
	}
	// Output:
	// ["Read" "Bash(git diff --staged)"]
	// argument-hint: ["scope"]
	// disable-model-invocation: "true"
}

// ExtensionKeys lists the keys of other agents' dialects that load as inert
// metadata; any other unknown key is refused.
func ExampleExtensionKeys() {
	fmt.Println(skills.ExtensionKeys())
	_, err := skills.ParseFrontmatter([]byte("---\nname: a\ndescription: d\ncategory: tools\n---\n"))
	fmt.Println(skills.CodeOf(err))
	// Output:
	// [agent argument-hint arguments context disable-model-invocation disallowed-tools effort homepage hooks model paths shell triggers user-invocable version when_to_use]
	// unknown_key
}
