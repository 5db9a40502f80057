package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"

	"github.com/pabloagent/pablo/internal/clock"
)

// TestTasksOnOnePinReadConcurrently defends the rule that every task on a
// pinned commit shares its index and reads the repository at the same
// time as the others, safely (run it with -race): eight tasks, on two
// stores of one repository sharing one cache, call all six tools at once
// while newer commits land on the ref. Every answer is the pinned one; a
// diff against the moving ref is the pin's diff or a typed error, never a
// torn read.
func TestTasksOnOnePinReadConcurrently(t *testing.T) {
	t.Parallel()
	o, err := ParseOntology("ontology.toml", []byte(testOntology))
	if err != nil {
		t.Fatal(err)
	}
	r := newTestRepo(t)
	first := r.commit(baseFiles())
	// Packed, so that the readers share pack files, as in a repository a
	// git gc has run on.
	if err := r.repo.RepackObjects(&git.RepackConfig{}); err != nil {
		t.Fatal(err)
	}
	cache := NewCache(4)
	stores := []*Store{r.store(Options{Cache: cache}), r.store(Options{Cache: cache})}
	pin := Pin{Ref: "refs/heads/main", Commit: first}
	all := Grant{Scope: Scope{Kinds: []string{"service", "team"}, Paths: []string{"*"}}, Refresh: true}
	grants := map[string]Grant{ToolSearch: all, ToolRead: all, ToolGrep: all, ToolDiff: all, ToolPropose: all, ToolValidate: all}
	calls := []struct{ tool, args, want string }{
		{ToolSearch, `{"text":"billing"}`, `"billing"`},
		{ToolRead, `{"id":"billing"}`, `Version one.`},
		{ToolRead, `{"path":"handbook/oncall.md"}`, `Version one.`},
		{ToolGrep, `{"pattern":"Version"}`, `Version one.`},
		{ToolDiff, `{"against":"` + first + `"}`, `"total":0`},
		{ToolPropose, `{"subject":"s","changes":[{"op":"edit","record":{"id":"ledger","kind":"service","owner":"o","repo":"r"}}]}`, `"files"`},
		{ToolValidate, `{"changes":[{"op":"add","record":{"id":"n","kind":"service","owner":"o","repo":"r"}}]}`, `"valid":true`},
	}
	const tasks = 8
	var wg sync.WaitGroup
	errs := make(chan error, tasks*len(calls)*4+8)
	for i := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mu sync.Mutex
			written := map[string][]byte{}
			tools, err := OpenTools(context.Background(), ToolsOptions{Store: stores[i%2], Ref: "refs/heads/main", Pin: &pin, Ontology: o, Grants: grants,
				WritePatch: func(name string, data []byte) (string, error) {
					mu.Lock()
					defer mu.Unlock()
					written[name] = data
					return name, nil
				},
				Clock: clock.NewManual(time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)),
			})
			if err != nil {
				errs <- err
				return
			}
			for round := range 3 {
				for _, c := range calls {
					out, err := tools.Call(context.Background(), c.tool, json.RawMessage(c.args))
					if err != nil {
						errs <- fmt.Errorf("task %d round %d %s: %w", i, round, c.tool, err)
						continue
					}
					b, _ := json.Marshal(out)
					if !strings.Contains(string(b), c.want) || strings.Contains(string(b), "Version two") {
						errs <- fmt.Errorf("task %d round %d %s = %s, want the pinned answer with %s", i, round, c.tool, b, c.want)
					}
				}
				// The moving ref: the newest commit, or a typed error.
				if _, err := tools.Call(context.Background(), ToolDiff, json.RawMessage(`{"against":"current"}`)); err != nil && !errors.Is(err, ErrRef) && !errors.Is(err, ErrRepository) {
					errs <- fmt.Errorf("task %d: a diff against the moving ref = %v, want an answer or a typed error", i, err)
				}
			}
		}()
	}
	// Newer commits land on the ref while the tasks read.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := range 4 {
			files := baseFiles()
			files[recPath("service", "billing")] = record("billing", "service", "owner: payments", "repo: acme/billing", fmt.Sprintf("body:Billing. Version two, %d.", n))
			files["handbook/oncall.md"] = text("# On call\nVersion two.\n")
			r.commit(files)
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if cache.Builds() != 1 {
		t.Errorf("%d index builds for one pinned commit, want 1", cache.Builds())
	}
}
