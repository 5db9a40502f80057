package pablo

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/internal/providertest"
)

// TestRouteRetriesRecordEachAttempt: a 429 with Retry-After: 1 on a
// route's entry is retried on that entry after one second of the task's
// clock (options.model.retry), within the run; each attempt is its own
// model call on the ledger and its own model_route record (the failed
// one says how long the retry waits), and the task completes.
func TestRouteRetriesRecordEachAttempt(t *testing.T) {
	t.Parallel()
	srv := providertest.New(providertest.Options{Quirk: providertest.RateLimited, Faults: 1, Turns: []providertest.Turn{{Text: "INV-1042 was paid."}}})
	defer srv.Close()
	body := "[options.models.first]\nprovider = \"openai_compatible\"\nid = \"first-id\"\ncredential = \"local\"\nendpoint = \"" + srv.Endpoint() + "\"\n" +
		"[options.models.second]\nprovider = \"openai_compatible\"\nid = \"second-id\"\ncredential = \"local\"\nendpoint = \"" + srv.Endpoint() + "\"\n" +
		"[options.routes.main]\nentries = [{ model = \"first\" }, { model = \"second\" }]\n" +
		"[options]\nmodel_route = \"main\"\n" +
		"[options.model.retry]\nmax_attempts = 2\ninitial_backoff_ms = 100\nmax_backoff_ms = 5000\n"
	d := providerDeployment(t, body, func(o *LoadOptions) { o.LoopbackHTTP = false })
	c := clock.NewManual(time.Now())
	go func() {
		c.WaitPending(time.Second, 1)
		c.Advance(time.Second)
	}()
	obj, events := runProviderTask(t, d, HostOptions{Clock: c, LookupEnv: lookupKey})
	if obj.Outcome.Status != event.StatusCompleted {
		b, _ := json.Marshal(obj.Outcome)
		t.Fatalf("outcome %s", b)
	}
	if obj.Accounting.ModelCalls.N != 2 || srv.Requests() != 2 {
		t.Fatalf("model calls %s, requests %d: want 2 (the 429, its retry)", obj.Accounting.ModelCalls, srv.Requests())
	}
	var records []string
	for _, ev := range events {
		if ev.Type == event.ModelFinished && ev.ModelRoute != nil {
			r := ev.ModelRoute
			rec := r.Entry + "/" + r.SelectionReason + "/" + ev.Status
			if r.RetryInMS != nil {
				b, _ := json.Marshal(*r.RetryInMS)
				rec += "/wait " + string(b)
			}
			records = append(records, rec)
		}
	}
	if strings.Join(records, " ") != "first/initial/failed/wait 1000 first/retry/completed" {
		t.Fatalf("route records: %v", records)
	}
}

// TestRouteFailureReasonNamesTheEntry: a route whose every attempt failed
// ends the task with a reason naming the entry that failed last, how many
// attempts were made and what the provider said.
func TestRouteFailureReasonNamesTheEntry(t *testing.T) {
	t.Parallel()
	srv := providertest.New(providertest.Options{Quirk: providertest.ModelNotFound})
	defer srv.Close()
	body := "[options.models.first]\nprovider = \"openai_compatible\"\nid = \"llama9\"\ncredential = \"local\"\nendpoint = \"" + srv.Endpoint() + "\"\n" +
		"[options.routes.main]\nentries = [{ model = \"first\" }]\n" +
		"[options]\nmodel_route = \"main\"\n"
	d := providerDeployment(t, body, func(o *LoadOptions) { o.LoopbackHTTP = false })
	obj, _ := runProviderTask(t, d, HostOptions{LookupEnv: lookupKey})
	o := obj.Outcome
	for _, w := range []string{"openai_compatible/llama9", "route main entry first", "1 attempt", "HTTP 400", providertest.MessageModelNotFound} {
		if !strings.Contains(o.Reason, w) {
			t.Fatalf("the reason does not say %q: %q", w, o.Reason)
		}
	}
	if strings.Contains(o.Reason, providerTestKey) {
		t.Fatal("the reason holds the credential")
	}
}
