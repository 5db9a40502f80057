package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// runACPPeer runs the TypeScript client (testdata/acppeer.mjs) on cfg and
// fails the test on every problem it reports.
func runACPPeer(t *testing.T, peers acpPeers, cfg map[string]any) {
	t.Helper()
	arg, _ := json.Marshal(cfg)
	ctx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	cmd := exec.CommandContext(ctx, peers.node, "testdata/acppeer.mjs", string(arg))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var res struct {
		OK        bool                       `json:"ok"`
		Problems  []string                   `json:"problems"`
		Scenarios map[string]json.RawMessage `json:"scenarios"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("the client printed no result (%v, %v):\nstdout %s\nstderr %s", runErr, err, stdout.String(), stderr.String())
	}
	for _, p := range res.Problems {
		t.Error(p)
	}
	for name, r := range res.Scenarios {
		t.Logf("%s: %s", name, r)
	}
	if runErr != nil || !res.OK {
		t.Fatalf("the client failed (%v); its stderr:\n%s", runErr, stderr.String())
	}
}

// realDir is a fresh temporary directory by its real path, as an editor
// sends its project root.
func realDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestACPEditorFeaturesWithTheTypeScriptClient drives `pablo acp --stdio`
// with the real ACP TypeScript client SDK through what editors render and
// rely on (issue 32): the activated Skills offered as slash commands, an
// fs.edit's tool_call carrying its file as a location and its change as a
// diff.
func TestACPEditorFeaturesWithTheTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pablo and runs Node")
	}
	peers := needACPPeers(t)
	dir := t.TempDir()
	bin := buildPablo(t, dir)

	// render: a Skill activated, writes allowed, an fs.edit.
	renderWS := realDir(t)
	os.WriteFile(filepath.Join(renderWS, "greeting.txt"), []byte("hello wrold\n"), 0o600)
	os.MkdirAll(filepath.Join(dir, "skills", "proofread"), 0o700)
	os.WriteFile(filepath.Join(dir, "skills", "proofread", "SKILL.md"), []byte("---\nname: proofread\ndescription: Fixes spelling in text files.\n---\nFix the spelling; change nothing else.\n"), 0o600)
	sum := sha256.Sum256([]byte("hello wrold\n"))
	render := acpDeployment(t, dir, "render",
		`{"turns":[{"tool_calls":[{"name":"fs_edit","arguments":{"path":"greeting.txt","expected_revision":"`+hex.EncodeToString(sum[:])+`","old_text":"wrold","new_text":"world"}}]},{"text":["fixed"]}]}`,
		"[options.shell]\nenabled = false\n[options.filesystem]\nenabled = true\nwrite = true\n[options.policy.write_roots]\ndefault = \"allow\"\n"+
			"[options.skills.roots]\nteam = { base = \"config\", path = \"skills\" }\n[options.skills]\nactivate = [\"team/proofread\"]\n")

	runACPPeer(t, peers, map[string]any{
		"sdk": peers.sdk, "bin": bin, "workspace": renderWS,
		"run": []string{"render"},
		"render": map[string]any{"args": []string{"acp", "--stdio", "--config", render, "--bind", "workspace=" + renderWS}, "workspace": renderWS,
			"commands": []string{"proofread"}, "file": "greeting.txt", "oldText": "wrold", "newText": "world"},
	})
	if got, _ := os.ReadFile(filepath.Join(renderWS, "greeting.txt")); string(got) != "hello world\n" {
		t.Errorf("the edit left %q", got)
	}
}
