package children

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/internal/schema"
)

// FuzzParseArguments holds the subagent parser to its contract on any
// bytes: it never panics, a refusal is an *Error matching ErrArguments,
// and what it accepts is within every bound and also passes the tool's
// input schema (the parser is never looser than the schema).
func FuzzParseArguments(f *testing.F) {
	for _, s := range []string{
		`{"action":"spawn","request":{"input":"x","handoffs":[{"source_agent_id":"` + uuidA + `","result_id":"` + uuidA + `","kind":"inline"}],"capabilities":{"tools":["fs.read"]},"ceilings":{"max_model_calls":3,"max_total_tokens":"10"}}}`,
		`{"action":"spawn_remote","remote_request":{"remote":"research","parts":[{"text":"hi"},{"raw":"aGk="}],"accepted_output_modes":["text/plain"],"stream":true}}`,
		`{"action":"wait","agent_ids":["` + uuidA + `"],"mode":"any","timeout_ms":900000}`,
		`{"action":"inspect","agent_id":"` + uuidA + `"}`,
		`{"action":"stop","agent_id":"` + uuidA + `","agent_id":"` + uuidA + `"}`,
		`{"action":"fork"}`, `[]`, `{"action":"spawn","request":{"input":"x","ceilings":{"max_tool_calls":1e3}}}`,
	} {
		f.Add([]byte(s))
	}
	remotes := []string{"research"}
	sc, err := schema.Compile(inputSchema(remotes), schema.DefaultLimits())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := ParseArguments(raw, remotes)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrArguments) {
				t.Fatalf("a refusal that is not an argument *Error: %v", err)
			}
			return
		}
		switch a.Action {
		case ActionSpawn:
			if n := len(a.Request.Input); n < 1 || n > MaxInputBytes || len(a.Request.Handoffs) > MaxHandoffs {
				t.Fatalf("spawn past its bounds: %d bytes, %d handoffs", n, len(a.Request.Handoffs))
			}
		case ActionSpawnRemote:
			if err := checkRemote(a.Remote, remotes); err != nil {
				t.Fatal(err)
			}
		case ActionInspect, ActionStop:
			if !isUUID(a.AgentID) {
				t.Fatal(a.AgentID)
			}
		case ActionWait:
			w := a.Wait
			ids := slices.Clone(w.AgentIDs)
			slices.Sort(ids)
			if len(ids) < 1 || len(ids) > MaxWaitHandles || len(slices.Compact(ids)) != len(w.AgentIDs) || w.Timeout < 0 || w.Timeout > MaxWaitTimeout {
				t.Fatalf("wait past its bounds: %+v", w)
			}
		default:
			t.Fatalf("action %q accepted", a.Action)
		}
		if len(raw) <= 1<<20 {
			if res := sc.Validate(raw); !res.Valid {
				t.Fatalf("the parser accepted what the schema refuses: %+v", res.Diagnostics)
			}
		}
	})
}

// FuzzArtifactPath holds the artifact path check to its rule: what it
// accepts is local to the workspace (no "..", not absolute, no NUL or
// backslash), and it never panics.
func FuzzArtifactPath(f *testing.F) {
	for _, s := range []string{"notes.md", "out/report.md", "./a//b", "../x", "/etc/passwd", "a/../../b", "a\\b", "", ".", "a/\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		parts, err := artifactPath(p)
		if err != nil {
			if !errors.Is(err, ErrArguments) {
				t.Fatalf("an untyped refusal: %v", err)
			}
			return
		}
		if len(parts) == 0 || !filepath.IsLocal(filepath.Join(parts...)) {
			t.Fatalf("%q accepted as %q", p, parts)
		}
		for _, c := range parts {
			if c == "" || c == "." || c == ".." || strings.ContainsAny(c, "/\\\x00") {
				t.Fatalf("%q gave component %q", p, c)
			}
		}
	})
}
