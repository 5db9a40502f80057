package pablo_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeLinksTheConfigurationReferenceFromEverySectionThatNamesAKey:
// a README section that names a deployment key (a key of
// docs/configuration.md in backticks, with or without its options.
// prefix, any `options.…` name, or a TOML table of the deployment) links
// docs/configuration.md, where every key's type, default and range are.
func TestReadmeLinksTheConfigurationReferenceFromEverySectionThatNamesAKey(t *testing.T) {
	doc, err := os.ReadFile("docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		keys[m[1]] = true
		if rest, ok := strings.CutPrefix(m[1], "options."); ok && strings.Contains(rest, ".") {
			keys[rest] = true
		}
		// A key's own name, when it is a word no prose uses otherwise
		// (max_backoff_ms, on_denial): it has an underscore.
		if leaf := m[1][strings.LastIndex(m[1], ".")+1:]; strings.Contains(leaf, "_") {
			keys[leaf] = true
		}
	}
	if len(keys) < 100 {
		t.Fatalf("docs/configuration.md lists %d keys: is it generated?", len(keys))
	}
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	// A name in backticks, alone or as a TOML table or assignment
	// (`[options.shell.sandbox]`, `on_denial = "report"`).
	tick := regexp.MustCompile("`\\[{0,2}([A-Za-z_][A-Za-z0-9_.\\[\\]]*?)\\]{0,2}(?: = [^`]*)?`")
	table := regexp.MustCompile(`^\[\[?(options|credentials|authority|deployment)[\].]`)
	heading, body, fence := "", []string{}, false
	check := func() {
		text := strings.Join(body, "\n")
		names := ""
		for _, m := range tick.FindAllStringSubmatch(text, -1) {
			if keys[m[1]] || strings.HasPrefix(m[1], "options.") {
				names = m[1]
				break
			}
		}
		for _, l := range body {
			if names == "" && table.MatchString(l) {
				names = l
			}
		}
		if heading != "" && names != "" && !strings.Contains(text, "(docs/configuration.md)") {
			t.Errorf("README section %q names %s but does not link docs/configuration.md", heading, names)
		}
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if !fence && regexp.MustCompile(`^#{2,4} `).MatchString(line) {
			check()
			heading, body = line, nil
			continue
		}
		body = append(body, line)
	}
	check()
}
