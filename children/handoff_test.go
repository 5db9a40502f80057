package children

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/ids"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// settleWith spawns a child, settles it with res and returns its snapshot.
func settleWith(t *testing.T, tr *Tree, r *fakeRunner, res Result) Snapshot {
	t.Helper()
	s := spawn(t, tr, "source")
	r.await(t, s.AgentID).settle(res)
	return settledSnapshot(t, tr, s.AgentID)
}

func TestInlineHandoffPassesTheValidOutputAndItsReceipts(t *testing.T) {
	t.Parallel()
	tr, r, _ := newTree(t, nil)
	src := validStructured(`{"finding":"ok"}`)
	src.Repair = json.RawMessage(`{"schema_version":"output-repair-v1","status":"not_needed","attempts":0,"validation_attempts":1,"feedback_bytes":0,"previous_error_count":0}`)
	s := settleWith(t, tr, r, src)
	if s.ResultID == "" {
		t.Fatal("a completed child has a result ID")
	}
	again, _ := tr.Inspect(context.Background(), s.AgentID)
	if again.ResultID != s.ResultID {
		t.Fatal("the result ID is stable")
	}
	d, err := tr.Spawn(context.Background(), Request{Input: "synthesize", Handoffs: []Handoff{{SourceAgentID: s.AgentID, ResultID: s.ResultID, Kind: HandoffInline}}})
	if err != nil {
		t.Fatal(err)
	}
	h := r.await(t, d.AgentID)
	if len(h.spec.Handoffs) != 1 || h.spec.Handoffs[0].Inline == nil {
		t.Fatalf("%+v", h.spec.Handoffs)
	}
	in := h.spec.Handoffs[0].Inline
	if string(in.Output) != `{"finding":"ok"}` || string(in.Validation) != string(src.Validation) || string(in.Repair) != string(src.Repair) ||
		in.TraceID != "trace-1" || in.Accounting.ModelCalls.N != 1 {
		t.Fatalf("inline handoff %+v", in)
	}
}

func TestHandoffsThatCannotBeMade(t *testing.T) {
	t.Parallel()
	tr, r, _ := newTree(t, func(o *Options) { o.Capacity.Active = 1 })
	valid := settleWith(t, tr, r, validStructured(`{"a":1}`))
	plain := settleWith(t, tr, r, completed("no schema"))
	invalid := validStructured(`{"a":"x"}`)
	invalid.Validation = json.RawMessage(`{"schema_version":"output-validation-v1","schema_sha256":"sha256:00","status":"invalid","diagnostics":[]}`)
	bad := settleWith(t, tr, r, invalid)
	failedChild := settleWith(t, tr, r, Result{Outcome: event.Outcome{Status: outcome.Failed, Code: outcome.FailToolExecution}})
	other, ro, _ := newTree(t, func(o *Options) { o.IDs = ids.NewSequential(1 << 20) })
	foreignRoot := settleWith(t, other, ro, validStructured(`{"a":2}`))

	for name, c := range map[string]struct {
		h    Handoff
		code Code
	}{
		"a failed child":           {Handoff{failedChild.AgentID, "00000000-0000-4000-8000-00000000aaaa", HandoffInline}, CodeHandoffRefused},
		"an unvalidated output":    {Handoff{plain.AgentID, plain.ResultID, HandoffInline}, CodeHandoffRefused},
		"a schema-invalid output":  {Handoff{bad.AgentID, bad.ResultID, HandoffInline}, CodeHandoffRefused},
		"an unknown result":        {Handoff{valid.AgentID, "00000000-0000-4000-8000-00000000bbbb", HandoffInline}, CodeUnknownResult},
		"a foreign agent":          {Handoff{plain.AgentID, valid.ResultID, HandoffInline}, CodeForeignAgent},
		"another root's result":    {Handoff{foreignRoot.AgentID, foreignRoot.ResultID, HandoffInline}, CodeUnknownResult},
		"an artifact never named":  {Handoff{valid.AgentID, valid.ResultID, HandoffArtifact}, CodeHandoffRefused},
		"an unknown kind":          {Handoff{valid.AgentID, valid.ResultID, "copy"}, CodeOutOfRange},
		"the parent as the source": {Handoff{"root-agent", valid.ResultID, HandoffInline}, CodeForeignAgent},
	} {
		_, err := tr.Spawn(context.Background(), Request{Input: "downstream", Handoffs: []Handoff{c.h}})
		if err == nil {
			t.Errorf("%s: the handoff must fail", name)
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != c.code {
			t.Errorf("%s: want %s, got %v", name, c.code, err)
		}
		if c.code != CodeOutOfRange && !errors.Is(err, ErrHandoff) {
			t.Errorf("%s: must match ErrHandoff", name)
		}
	}
	if failedChild.ResultID != "" {
		t.Fatal("a failed child has no result ID")
	}
	// Seventeen handoffs, and a repeated one.
	var hs []Handoff
	for range MaxHandoffs + 1 {
		hs = append(hs, Handoff{valid.AgentID, valid.ResultID, HandoffInline})
	}
	_, err := tr.Spawn(context.Background(), Request{Input: "d", Handoffs: hs})
	wantCode(t, err, CodeOutOfRange)
	_, err = tr.Spawn(context.Background(), Request{Input: "d", Handoffs: hs[:2]})
	wantCode(t, err, CodeOutOfRange)
}

// workspace makes a workspace with one file and returns its root and the
// file's revision.
func workspace(t *testing.T, name, content string) (*os.Root, string, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	sum := sha256.Sum256([]byte(content))
	return root, dir, hex.EncodeToString(sum[:])
}

func readerSpec() Spec { return Spec{Capabilities: Capabilities{Tools: []string{"fs.read"}}} }

func TestRootVerifierAcceptsTheRevisionAndRefusesEveryStaleFile(t *testing.T) {
	t.Parallel()
	root, dir, rev := workspace(t, "out/report.md", "the report")
	v := &RootVerifier{Root: root}
	ctx := context.Background()
	if err := v.VerifyArtifact(ctx, readerSpec(), Artifact{Path: "out/report.md", Revision: rev}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("report.md", filepath.Join(dir, "out/link.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("out", filepath.Join(dir, "outlink")); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		spec Spec
		a    Artifact
		code Code
	}{
		"another revision":        {readerSpec(), Artifact{"out/report.md", rev[:63] + "0"}, CodeStaleArtifact},
		"a missing file":          {readerSpec(), Artifact{"out/gone.md", rev}, CodeStaleArtifact},
		"a symlinked file":        {readerSpec(), Artifact{"out/link.md", rev}, CodeStaleArtifact},
		"a symlinked directory":   {readerSpec(), Artifact{"outlink/report.md", rev}, CodeStaleArtifact},
		"a directory":             {readerSpec(), Artifact{"out", rev}, CodeStaleArtifact},
		"an escape":               {readerSpec(), Artifact{"../report.md", rev}, CodeOutOfRange},
		"an absolute path":        {readerSpec(), Artifact{filepath.Join(dir, "out/report.md"), rev}, CodeOutOfRange},
		"an upper-case revision":  {readerSpec(), Artifact{"out/report.md", "A" + rev[1:]}, CodeOutOfRange},
		"a child without fs.read": {Spec{}, Artifact{"out/report.md", rev}, CodeHandoffRefused},
	} {
		err := v.VerifyArtifact(ctx, c.spec, c.a)
		var e *Error
		if !errors.As(err, &e) || e.Code != c.code {
			t.Errorf("%s: want %s, got %v", name, c.code, err)
		}
	}
	deny := &RootVerifier{Root: root, Read: func(Spec, string) error { return errors.New("outside the child's read roots") }}
	if err := deny.VerifyArtifact(ctx, readerSpec(), Artifact{"out/report.md", rev}); !errors.Is(err, ErrStaleArtifact) {
		t.Fatalf("the read policy refuses: %v", err)
	}
}

func TestRootVerifierCatchesAFileReplacedBetweenCheckAndUse(t *testing.T) {
	t.Parallel()
	root, dir, rev := workspace(t, "report.md", "the report")
	p := filepath.Join(dir, "report.md")
	for name, swap := range map[string]func(){
		"same content, another file": func() {
			os.WriteFile(p+".new", []byte("the report"), 0o644)
			os.Rename(p+".new", p)
		},
		"a symlink to a copy": func() {
			os.WriteFile(filepath.Join(dir, "copy.md"), []byte("the report"), 0o644)
			os.Remove(p)
			os.Symlink("copy.md", p)
		},
	} {
		os.Remove(p)
		os.WriteFile(p, []byte("the report"), 0o644)
		v := &RootVerifier{Root: root, betweenCheckAndOpen: swap}
		if err := v.VerifyArtifact(context.Background(), readerSpec(), Artifact{"report.md", rev}); !errors.Is(err, ErrStaleArtifact) {
			t.Errorf("%s: a file swapped between Lstat and open must be stale, got %v", name, err)
		}
	}
}

func TestStaleArtifactFailsTheDownstreamChildWithZeroModelCalls(t *testing.T) {
	t.Parallel()
	root, dir, rev := workspace(t, "notes.md", "v1")
	tr, r, _ := newTree(t, func(o *Options) { o.Verifier = &RootVerifier{Root: root} })
	res := completed("wrote notes.md")
	res.Artifact = &Artifact{Path: "notes.md", Revision: rev}
	src := settleWith(t, tr, r, res)
	if src.Artifact == nil || src.Artifact.Revision != rev {
		t.Fatal("the snapshot names the artifact")
	}
	hand := []Handoff{{SourceAgentID: src.AgentID, ResultID: src.ResultID, Kind: HandoffArtifact}}

	// Fresh: the downstream child starts with the artifact.
	ok, err := tr.Spawn(context.Background(), Request{Input: "read it", Handoffs: hand})
	if err != nil {
		t.Fatal(err)
	}
	if h := r.await(t, ok.AgentID); h.spec.Handoffs[0].Artifact.Revision != rev {
		t.Fatal("the artifact reaches the child")
	}
	starts := r.startCount()

	// Replaced after the source settled: the downstream child never starts.
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	stale, err := tr.Spawn(context.Background(), Request{Input: "read it", Handoffs: hand})
	if err != nil {
		t.Fatal(err)
	}
	s := settledSnapshot(t, tr, stale.AgentID)
	if s.Outcome.Status != outcome.Failed || s.Outcome.Code != outcome.FailChildAdmission || s.Outcome.Delivery != outcome.NotSent {
		t.Fatalf("%+v", s.Outcome)
	}
	if r.startCount() != starts {
		t.Fatal("the runner was called for a child with a stale artifact")
	}
	if s.Accounting.ModelCalls.N != 0 {
		t.Fatal("zero model calls")
	}
}
