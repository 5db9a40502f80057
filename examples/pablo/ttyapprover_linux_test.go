package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/approval"
	"golang.org/x/sys/unix"
)

// openPTY opens a real pseudo-terminal pair: the terminal (what a user's
// shell gives `pablo run` as stdin) and its controller (the test's side:
// what the user sees and types).
func openPTY(t *testing.T) (term, controller *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	// Non-blocking, so the runtime poller owns it and Close ends a read.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	controller = os.NewFile(uintptr(fd), "/dev/ptmx")
	term, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		controller.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { term.Close(); controller.Close() })
	return term, controller
}

// screen collects what the terminal shows, so the test can wait for a
// prompt and answer it as a user would.
type screen struct {
	mu   sync.Mutex
	text bytes.Buffer
	more chan struct{} // signalled on every read
}

func watch(t *testing.T, controller *os.File) *screen {
	s := &screen{more: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var buf [4096]byte
		for {
			n, err := controller.Read(buf[:])
			s.mu.Lock()
			s.text.Write(buf[:n])
			s.mu.Unlock()
			select {
			case s.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	// The reader ends when the controller closes (Cleanup, registered
	// after openPTY's, runs first).
	t.Cleanup(func() { controller.Close(); <-done })
	return s
}

// waitFor waits until the screen has shown want n times, or the run ended.
func (s *screen) waitFor(t *testing.T, want string, n int, ended <-chan struct{}) {
	t.Helper()
	for {
		s.mu.Lock()
		got := strings.Count(s.text.String(), want)
		s.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-s.more:
		case <-ended:
			t.Fatalf("the run ended before the terminal showed %q %d times:\n%s", want, n, s.String())
		}
	}
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

// TestRunAsksOnItsTerminal: `pablo run` with a terminal as stdin and no
// --approve asks the user, on that terminal, about each call that needs
// approval. The prompt shows the exact call (request, agent, call ID,
// capability, effect, masked arguments and resources, the rule that
// asked), with anything a model wrote that a terminal could act on
// escaped; each of the four answers does what it says; the ledger records
// the answers as coming from the tty; and a cancel while the question
// waits denies the call.
func TestRunAsksOnItsTerminal(t *testing.T) {
	const secret = "AKIAIOSFODNN7EXAMPLE" // a secret of a built-in format
	cases := []struct {
		name    string
		answers []string // typed in turn, one per prompt
		prompts int      // questions asked
		status  string   // the task's outcome
		// results are the two calls' settlements: an allowed second
		// write of the same new file ran and found it there (a revision
		// conflict, recoverable), a rejected one never ran.
		results []string
		ledger  string // the approval records' answers
		wrote   bool   // the file exists afterwards
	}{
		{"AllowOnce", []string{"o", "o"}, 2, "completed", []string{"completed", "recoverable_error"}, "allow_once allow_once", true},
		{"AllowForTask", []string{"t"}, 1, "completed", []string{"completed", "recoverable_error"}, "allow_for_task allow_for_task", true},
		{"Reject", []string{"maybe", "r", "r"}, 2, "completed", []string{"recoverable_error", "recoverable_error"}, "reject reject", false},
		{"RejectForTask", []string{"x"}, 1, "completed", []string{"recoverable_error", "recoverable_error"}, "reject_for_task reject_for_task", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			cfg := filepath.Join(dir, "d.toml")
			os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.filesystem]\nwrite = true\n[options.approvals]\nfilesystem_write = \"required\"\n"), 0o600)
			// The same write twice; its text holds a secret of a known
			// format and a CSI that would clear the screen.
			call := `"name":"fs_write","arguments":{"path":"a.txt","text":"key ` + secret + ` \u009b2J\u001b[2J","expected_revision":null}`
			os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[{"tool_calls":[{"id":"c1",`+call+`}]},{"tool_calls":[{"id":"c2",`+call+`}]},{"text":["done"]}]}`), 0o600)
			store := filepath.Join(dir, "ledger.db")
			term, controller := openPTY(t)
			scr := watch(t, controller)
			var out, errb bytes.Buffer
			wd, _ := os.Getwd()
			ended := make(chan struct{})
			var code int
			go func() {
				defer close(ended)
				code = run(context.Background(), []string{"run", "go", "--json", "--config", cfg, "--bind", "workspace=" + ws, "--store", store},
					&host{stdin: term, stdout: &out, stderr: &errb, lookupEnv: func(string) (string, bool) { return "", false }, workDir: wd})
			}()
			for i, a := range c.answers {
				// Every question, asked or asked again, ends with the
				// choices: answer once it is on the screen.
				scr.waitFor(t, answerChoices, i+1, ended)
				controller.WriteString(a + "\n")
			}
			<-ended
			shown := scr.String()
			if got := strings.Count(shown, "pablo: approval needed"); got != c.prompts {
				t.Errorf("asked %d times, want %d:\n%s", got, c.prompts, shown)
			}
			var obj struct {
				RunID   string `json:"run_id"`
				Outcome struct {
					Status string `json:"status"`
				} `json:"outcome"`
			}
			if err := json.Unmarshal(out.Bytes(), &obj); err != nil || obj.Outcome.Status != c.status {
				t.Fatalf("exit %d, %s %s, want %s", code, out.String(), errb.String(), c.status)
			}
			// The exact call, masked and escaped.
			for _, w := range []string{"  request    apr_", "  call       call_1_1", "  capability fs.write", "  effect     write",
				`  arguments  {"path":"a.txt"`, `\u009b2J`, `\u001b[2J`, "  asked by   options.approvals rule options.approvals.filesystem_write"} {
				if !strings.Contains(shown, w) {
					t.Errorf("the prompt does not show %q:\n%s", w, shown)
				}
			}
			if strings.Contains(shown, secret) || strings.Contains(shown, "\u009b") || strings.Contains(shown, "\x1b[2J") {
				t.Errorf("the prompt shows a secret or a raw terminal control:\n%q", shown)
			}
			if _, err := os.Stat(filepath.Join(ws, "a.txt")); (err == nil) != c.wrote {
				t.Errorf("the file was written: %v, want %v", err == nil, c.wrote)
			}
			_, js, _ := cli(t, "ledger", "show", "--json", "--store", store, obj.RunID)
			var report struct {
				Approvals []approval.Record `json:"approvals"`
			}
			json.Unmarshal([]byte(js), &report)
			var answers, results []string
			for _, a := range report.Approvals {
				if a.Channel != "tty" && a.Channel != "task_grant" {
					t.Errorf("approval %s came from %q, want tty", a.RequestID, a.Channel)
				}
				answers = append(answers, a.Answer)
				results = append(results, a.CallStatus)
			}
			if strings.Join(answers, " ") != c.ledger || strings.Join(results, " ") != strings.Join(c.results, " ") {
				t.Errorf("ledger answers %v, calls %v; want %s and %v", answers, results, c.ledger, c.results)
			}
		})
	}
	t.Run("CancelWhileAsked", func(t *testing.T) {
		term, controller := openPTY(t)
		scr := watch(t, controller)
		a := openTTYApprover(term)
		if a == nil {
			t.Fatal("a pseudo-terminal is not taken for a terminal")
		}
		defer a.Close()
		ctx, cancel := context.WithCancel(context.Background())
		answered := make(chan error, 1)
		go func() {
			_, err := a.Approve(ctx, approval.Request{ID: "apr_x", CallID: "c1", Tool: "fs.write", Effect: "write", Arguments: json.RawMessage(`{}`)})
			answered <- err
		}()
		scr.waitFor(t, "Allow?", 1, nil)
		cancel()
		select {
		case err := <-answered:
			if err == nil {
				t.Fatal("a cancelled question answered")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a cancel did not end the question")
		}
	})
}

// TestNoTerminalNoChannel: a stdin that is not a terminal (a file, a pipe,
// none) is no approval channel.
func TestNoTerminalNoChannel(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, in := range []io.Reader{f, r, nil, strings.NewReader("o\n")} {
		if a := openTTYApprover(in); a != nil {
			a.Close()
			t.Errorf("%T is taken for a terminal", in)
		}
	}
}
