package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/internal/providertest"
)

const (
	quickBegin = "<!-- quickstart:begin"
	quickEnd   = "<!-- quickstart:end -->"
)

// quickStart is the README's quick start: its commands, its TOML files
// and the environment variables it exports.
type quickStart struct {
	commands [][]string
	files    map[string]string
	env      []string
}

// readQuickStart parses the README's quick start section.
func readQuickStart(t *testing.T) quickStart {
	t.Helper()
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	begin, end := strings.Index(readme, quickBegin), strings.Index(readme, quickEnd)
	if begin < 0 || end < begin {
		t.Fatalf("the README has no quick start section (%q … %q)", quickBegin, quickEnd)
	}
	// On the first screen, right after the demo.
	if demo := strings.Index(readme, "go run ./examples/pablo demo\n"); demo < 0 || demo > begin || strings.Count(readme[:begin], "\n") > 40 {
		t.Fatalf("the quick start does not follow the demo on the README's first screen (line %d)", strings.Count(readme[:begin], "\n")+1)
	}
	qs := quickStart{files: map[string]string{}}
	fence := regexp.MustCompile("(?s)```(sh|toml)\n(.*?)```")
	for _, m := range fence.FindAllStringSubmatch(readme[begin:end], -1) {
		if m[1] == "toml" {
			name, _, _ := strings.Cut(strings.TrimPrefix(m[2], "# "), "\n")
			qs.files[name] = m[2]
			continue
		}
		for _, line := range strings.Split(m[2], "\n") {
			line = strings.TrimSpace(line)
			if name, ok := strings.CutPrefix(line, "export "); ok {
				name, _, _ = strings.Cut(name, "=")
				qs.env = append(qs.env, name)
			}
			if rest, ok := strings.CutPrefix(line, "pablo "); ok {
				qs.commands = append(qs.commands, shellWords(t, rest))
			}
		}
	}
	return qs
}

// shellWords splits a command line of the README: words, double-quoted
// strings, and a comment from # on.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		switch {
		case line[0] == '#':
			return words
		case line[0] == '"':
			end := strings.IndexByte(line[1:], '"')
			if end < 0 {
				t.Fatalf("unterminated quote in %q", line)
			}
			words, line = append(words, line[1:end+1]), line[end+2:]
		default:
			word, rest, _ := strings.Cut(line, " ")
			words, line = append(words, word), rest
		}
	}
	return words
}

// wireOf is the fixture wire of a command's provider: its --provider, or
// the provider its --config file writes.
func wireOf(t *testing.T, args []string, files map[string]string) (providertest.Wire, string) {
	t.Helper()
	provider := ""
	for i, a := range args {
		switch {
		case a == "--provider" && i+1 < len(args):
			provider = args[i+1]
		case a == "--config" && i+1 < len(args):
			m := regexp.MustCompile(`(?m)^provider = "([a-z_]+)"`).FindStringSubmatch(files[args[i+1]])
			if m == nil {
				t.Fatalf("the README runs --config %s, which it does not show", args[i+1])
			}
			provider = m[1]
		}
	}
	switch provider {
	case "openai":
		return providertest.Responses, provider
	case "anthropic":
		return providertest.Anthropic, provider
	case "ollama", "openai_compatible":
		return providertest.Chat, provider
	}
	t.Fatalf("no fixture wire for provider %q in %q", provider, args)
	return 0, ""
}

// TestReadmeQuickStartRunsAgainstFixtures: every pablo command of the
// README's quick start, and each deployment it shows, runs to a completed
// task with the provider's URL replaced by a loopback fixture of that
// provider's wire (which serves only that wire's path), sends the model
// the command names, and finds its key where the README says it is read
// (doctor, with the exported variables set).
func TestReadmeQuickStartRunsAgainstFixtures(t *testing.T) {
	qs := readQuickStart(t)
	providers := map[string]bool{}
	for _, args := range qs.commands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			wire, provider := wireOf(t, args, qs.files)
			providers[provider] = true
			srv := providertest.New(providertest.Options{Wire: wire})
			defer srv.Close()
			dir := t.TempDir()
			for name, body := range qs.files {
				os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600)
			}
			os.WriteFile(filepath.Join(dir, "README.md"), []byte("# a project\n"), 0o600)
			env := map[string]string{}
			for _, name := range qs.env {
				env[name] = "test-key-for-" + name
			}
			var out, errb bytes.Buffer
			h := &host{stdout: &out, stderr: &errb, lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, workDir: dir, configDir: filepath.Join(dir, "no-user-config")}
			all := append(append([]string{}, args...), "--json", "--fixture-endpoint", srv.Endpoint())
			code := run(context.Background(), all, h)
			var obj struct {
				Outcome struct {
					Status string `json:"status"`
					Output string `json:"output"`
				} `json:"outcome"`
			}
			if code != 0 || json.Unmarshal(out.Bytes(), &obj) != nil || obj.Outcome.Status != "completed" || obj.Outcome.Output != "Paid on time." {
				t.Fatalf("exit %d: %s\n%s", code, out.String(), errb.String())
			}
			bodies := srv.Bodies()
			model := modelIn(args, qs.files)
			if len(bodies) != 1 || !bytes.Contains(bodies[0], []byte(model)) {
				t.Fatalf("want one request for model %q, got %d: %.300s", model, len(bodies), bytes.Join(bodies, nil))
			}
			doctor := append([]string{"doctor"}, withoutTask(args)...)
			out.Reset()
			errb.Reset()
			run(context.Background(), doctor, h)
			if !strings.Contains(out.String(), "ok   credentials") {
				t.Fatalf("%q: the key is not found where the README says: %s %s", doctor, out.String(), errb.String())
			}
		})
	}
	for _, want := range []string{"openai", "anthropic", "ollama", "openai_compatible"} {
		if !providers[want] {
			t.Errorf("the quick start runs no command with provider %s", want)
		}
	}
}

// modelIn is the model a command names: --model, or its file's id.
func modelIn(args []string, files map[string]string) string {
	for i, a := range args {
		if a == "--model" && i+1 < len(args) {
			return args[i+1]
		}
		if a == "--config" && i+1 < len(args) {
			if m := regexp.MustCompile(`(?m)^id = "([^"]+)"`).FindStringSubmatch(files[args[i+1]]); m != nil {
				return m[1]
			}
		}
	}
	return ""
}

// withoutTask is a command's flags: no "run", no task.
func withoutTask(args []string) []string {
	if args[0] == "run" {
		args = args[1:]
	}
	return args[1:]
}
