package pablo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGo is a go command that answers scripts/test.sh's calls without
// building anything: the race-enabled suite passes one test, one package
// has one fuzz target, and the fuzz run does what $FAKE_FUZZ says
// ("finding": a failing input; "engine": fails without one, every time).
const fakeGo = `#!/bin/sh
case "$1 $2" in
"env GOPATH") echo "$FAKE_BIN" ;;
"version "*) echo "go version fake" ;;
"list ./...") echo "example.test/pkg" ;;
"test -list") echo "FuzzX" ;;
"test -run")
	if [ "$FAKE_FUZZ" = finding ]; then echo "--- FAIL: FuzzX"; echo "    Failing input written to testdata/fuzz/FuzzX/0"; exit 1; fi
	echo "fuzz: elapsed: 5s, the coordinator missed its deadline"; exit 1 ;;
"test -race")
	case "$FAKE_SUITE" in
	build) printf '# example.test/b\nb/b.go:3:1: syntax error\nFAIL\texample.test/b [build failed]\n=== RUN   TestA\n--- PASS: TestA (0.00s)\nok  \texample.test/pkg\t0.01s\nFAIL\n'; exit 1 ;;
	panic) printf '=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\npanic: boom\n\ngoroutine 7 [running]:\nFAIL\texample.test/pkg\t0.01s\nFAIL\n'; exit 1 ;;
	timeout) printf '=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\npanic: test timed out after 15m0s\nFAIL\texample.test/pkg\t900.01s\nFAIL\n'; exit 1 ;;
	sub) printf '=== RUN   TestA\n=== RUN   TestA/x\n    --- FAIL: TestA/x (0.00s)\n--- FAIL: TestA (0.00s)\n=== RUN   TestS\n--- SKIP: TestS (0.00s)\nFAIL\nFAIL\texample.test/pkg\t0.01s\nFAIL\n'; exit 1 ;;
	*) printf '=== RUN   TestA\n--- PASS: TestA (0.00s)\nok  \texample.test/pkg\t0.01s\n' ;;
	esac ;;
esac
exit 0
`

// TestTestCommandCountsAFailedFuzzTargetAsAFailure: the test command's
// closing line counts what failed, and a fuzz target that fails (a finding,
// or the engine failing twice) is a failure: a run that exits non-zero for
// it never closes on "0 failed". So is a package that does not build, a
// panic or a timeout of the suite. Driven through scripts/test.sh itself with
// a stand-in go command on PATH.
func TestTestCommandCountsAFailedFuzzTargetAsAFailure(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Skip("bubblewrap is not installed: the test command would install it")
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) == 0 {
		t.Skip("postgresql is not installed: the test command would install it")
	}
	bin := t.TempDir()
	for name, body := range map[string]string{
		"go":          fakeGo,
		"gofmt":       "#!/bin/sh\nexit 0\n",
		"staticcheck": "#!/bin/sh\necho 'staticcheck 2025.1 (v0.8.2)'\n",
	} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ suite, fuzz, closing string }{
		{"", "finding", "1 passed, 1 failed, 0 skipped"},
		{"", "engine", "1 passed, 1 failed, 0 skipped"},
		// The suite's own failures, each as go test reports it: a
		// package that does not build, a panic and a timeout outside a
		// test's report count one failure each; a failed subtest and
		// its parent count two.
		{"build", "", "1 passed, 1 failed, 0 skipped"},
		{"panic", "", "1 passed, 1 failed, 0 skipped"},
		{"timeout", "", "1 passed, 1 failed, 0 skipped"},
		{"sub", "", "0 passed, 2 failed, 1 skipped"},
	} {
		cmd := exec.Command("bash", "scripts/test.sh")
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "FAKE_BIN="+bin, "FAKE_FUZZ="+tc.fuzz,
			"FAKE_SUITE="+tc.suite, "PABLO_SKIP_PEERS=1", "FUZZTIME=1s")
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("%s%s: the test command passed:\n%s", tc.suite, tc.fuzz, out)
		}
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		if last := lines[len(lines)-1]; last != tc.closing {
			t.Errorf("%s%s: the closing line is %q, want %q\n%s", tc.suite, tc.fuzz, last, tc.closing, out)
		}
	}
}
