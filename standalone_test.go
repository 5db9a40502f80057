package pablo_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The repository stands alone: a fresh clone, with nothing beside it, runs
// its tests, its scripts and its documented commands. Two kinds of path
// break that, and the rule below names both precisely.
//
//  1. The directory this project's checkouts were once developed beside,
//     reached by climbing out of the tree: ".." and then "shared", as one
//     slash-separated path, as Go path elements or as strings added
//     together, or "shared" as an element a path Join adds to a parent
//     reached some other way (see the first cases of
//     TestOutsidePathRuleIsPrecise). The original's files the tests need
//     live in testdata/reference.
//  2. An absolute path under a top-level directory that belongs to one
//     machine or one user: work, home, root or Users, at the start of a
//     path (after a quote, a backquote, a space, "=", "(" or at a line's
//     start, so a URL's path is not one). Documentation that needs an
//     absolute path writes a placeholder such as /path/to/project.
//
// Not flagged, on purpose: /tmp/ (every machine has it; the tracked uses
// name the sandbox's own private /tmp or are argument strings a test
// never opens), system paths such as /usr/bin/printf or /etc/passwd
// (the same on every Linux host, and the sandbox's subject), and other
// relative paths with "..", which the tests use as workspace-escape
// inputs, never as files they read.
//
// The files checked are the tracked ones (git ls-files) whose names end in
// .go, .sh, .md, .toml, .mjs, .json, .txt, .yml or .yaml, and any other
// tracked file that begins with "#!" (such as .ci/run). The patterns below
// are assembled from pieces so that this file does not name what it
// forbids.

var (
	besideCheckout = regexp.MustCompile(`\.\.(?:/|"\s*[,+]\s*"/?)(?:"\s*\+\s*")?` + "sha" + `red\b` +
		`|Join\(.*"` + "sha" + `red["/]`)
	machinePath = regexp.MustCompile(`(?:^|[\s"'` + "`" + `=(])(/(?:` + "wo" + `rk|ho` + `me|ro` + `ot|Us` + `ers)/)`)
)

var checkedSuffixes = []string{".go", ".sh", ".md", ".toml", ".mjs", ".json", ".txt", ".yml", ".yaml"}

// outsidePaths returns the places in text where a path outside the
// repository is named, as "line N: excerpt".
func outsidePaths(text string) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		if besideCheckout.MatchString(line) || machinePath.MatchString(line) {
			out = append(out, fmt.Sprintf("line %d: %s", i+1, strings.TrimSpace(line)))
		}
	}
	return out
}

// TestOutsidePathRuleIsPrecise: the rule flags each kind of path it names,
// in each spelling, and nothing it leaves alone.
func TestOutsidePathRuleIsPrecise(t *testing.T) {
	t.Parallel()
	up, sh, wk, hm := "..", "sha"+"red", "wo"+"rk", "ho"+"me"
	flagged := []string{
		`const presets = "` + up + `/` + up + `/` + up + `/` + sh + `/reference/presets"`,
		`--config ` + up + `/` + sh + `/reference/presets/production.toml`,
		`src := filepath.Join("` + up + `", "` + sh + `", "reference")`,
		`copyDir(t, "/` + wk + `/` + sh + `/reference/presets/skills", dir)`,
		`"--bind", "workspace=/` + hm + `/me/project"`,
		`/` + "ro" + `ot/go/bin/staticcheck`,
		"see `/" + "Us" + "ers/me/pablo`",
		`export PABLO_NPM_PREFIX=/` + wk + `/main/.npm-peers`,
		`(/` + hm + `/me/x)`,
		// The same climb spelled by concatenation, or a parent reached
		// by other means and joined with the directory's name.
		`dir := "` + up + `/" + "` + sh + `/reference"`,
		`dir := "` + up + `" + "/` + sh + `"`,
		`dir := "` + up + `" + "/" + "` + sh + `/reference"`,
		`src := filepath.Join(filepath.Dir(filepath.Dir(wd)), "` + sh + `", "reference")`,
		`src := path.Join(parent, "` + sh + `/reference")`,
	}
	for _, s := range flagged {
		if len(outsidePaths(s)) != 1 {
			t.Errorf("not flagged: %s", s)
		}
	}
	clean := []string{
		`const originals = "../../testdata/reference"`,
		`for _, path := range []string{"../outside.txt", "../../etc/passwd"}`,
		`imports = ["../presets/base.toml"]`,
		`url = "https://example.test/` + wk + `/` + hm + `/x"`,
		`--bind workspace=./` + wk + ` --bind preset=presets`,
		`const Home = "/tmp/home"`,
		`executable = "/usr/bin/printf"`,
		`"args": ["--config", "/path/to/project/pablo.toml"]`,
		`the ` + sh + ` lock of the store`,
		`dir/` + wk + `/` + hm + `/`,
	}
	for _, s := range clean {
		if got := outsidePaths(s); len(got) != 0 {
			t.Errorf("flagged: %s", s)
		}
	}
}

// TestNoFileNamesAPathOutsideTheRepository: no tracked test, script,
// document or deployment names a path outside the repository (the rule
// above), so a fresh clone with nothing beside it behaves as this one.
func TestNoFileNamesAPathOutsideTheRepository(t *testing.T) {
	t.Parallel()
	list, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout (git ls-files: %v): the tracked files are unknown", err)
	}
	checked := 0
	for _, name := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		b, err := os.ReadFile(name)
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		if !hasAnySuffix(name, checkedSuffixes) && !bytes.HasPrefix(b, []byte("#!")) {
			continue
		}
		checked++
		for _, hit := range outsidePaths(string(b)) {
			t.Errorf("%s %s", name, hit)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d files checked: the listing is not this repository's", checked)
	}
}

func hasAnySuffix(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}
