package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// graph --probe fetches every remote's card (no credential, nothing sent
// to the endpoint) and puts the admitted card's digest, or why the card
// was refused, on the remote's node; the graph digest stays the offline
// one.
func TestGraphProbeCarriesTheRemotesCards(t *testing.T) {
	t.Parallel()
	srv := a2aCardServer(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "a2a.toml")
	os.WriteFile(cfg, []byte(a2aRemoteTOML(srv.URL, "/card")+"[options.children]\nenabled = true\n"), 0o600)
	args := []string{"--json", "--loopback-http", "--config", cfg, "--bind", "workspace=" + dir}
	type graphDoc struct {
		Digest string
		Probed bool
		Nodes  []struct {
			ID, State string
			Reasons   []struct{ Code, Digest, Health string }
		}
	}
	read := func(probe bool) graphDoc {
		t.Helper()
		a := append([]string{"graph"}, args...)
		if probe {
			a = append(a, "--probe")
		}
		code, out, errOut := cli(t, a...)
		var g graphDoc
		if code != 0 || json.Unmarshal([]byte(out), &g) != nil {
			t.Fatalf("exit %d: %s %s", code, out, errOut)
		}
		return g
	}
	offline, probed := read(false), read(true)
	if offline.Digest != probed.Digest || offline.Probed || !probed.Probed {
		t.Fatalf("digests %s / %s, probed %t / %t", offline.Digest, probed.Digest, offline.Probed, probed.Probed)
	}
	found := 0
	for _, n := range probed.Nodes {
		switch n.ID {
		case "remote:plain":
			found++
			if n.State != "ready" || len(n.Reasons) != 1 || n.Reasons[0].Code != "card_admitted" || !strings.HasPrefix(n.Reasons[0].Digest, "sha256:") {
				t.Fatalf("plain: %+v", n)
			}
		case "remote:reviewer":
			found++
			if n.State != "unhealthy" || n.Reasons[0].Code != "card_security" || n.Reasons[0].Health != "refused" {
				t.Fatalf("reviewer: %+v", n)
			}
		}
	}
	if found != 2 {
		t.Fatalf("remote nodes: %+v", probed.Nodes)
	}
}

// doctor --probe a2a fetches the cards as a2a probe does: one check per
// remote, a refused card fails with its reason (exit 6 when it is the
// first failure), and the graph findings carry the cards.
func TestDoctorProbeA2AReportsEveryCard(t *testing.T) {
	t.Parallel()
	srv := a2aCardServer(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "a2a.toml")
	os.WriteFile(cfg, []byte(a2aRemoteTOML(srv.URL, "/card")+"[options.children]\nenabled = true\n"), 0o600)
	code, out, _ := cli(t, "doctor", "--probe", "a2a", "--json", "--loopback-http", "--config", cfg, "--bind", "workspace="+dir)
	var rep struct {
		Checks []struct{ Name, Status, Code string }
	}
	if json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("exit %d: %s", code, out)
	}
	got := map[string]string{}
	for _, c := range rep.Checks {
		got[c.Name] = c.Status + "/" + c.Code
	}
	// Exit 3: the first failing check is the reviewer's bearer, which
	// no source gives here.
	if code != 3 || got["probe.a2a.plain"] != "ok/" || got["probe.a2a.reviewer"] != "failed/card_security" || got["graph remote:reviewer"] != "failed/card_security" {
		t.Fatalf("exit %d: %v", code, got)
	}
}
