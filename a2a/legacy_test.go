package a2a

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/ledger/outcome"
)

// legacyCard is an A2A 0.3 card as 0.3 agents serve it: protocolVersion,
// url and preferredTransport at the top, the same url repeated in
// additionalInterfaces.
func legacyCard(endpoint string) map[string]any {
	return map[string]any{
		"name": "legacy", "description": "a 0.3 agent", "version": "1", "protocolVersion": "0.3.0",
		"url": endpoint, "preferredTransport": "JSONRPC",
		"additionalInterfaces": []any{map[string]any{"url": endpoint, "transport": "JSONRPC"}},
		"capabilities":         map[string]any{"streaming": true, "stateTransitionHistory": false},
		"defaultInputModes":    []any{"text/plain"},
		"defaultOutputModes":   []any{"text/plain"},
		"skills":               []any{map[string]any{"id": "s", "name": "S", "description": "d", "tags": []any{}}},
	}
}

// TestLegacyCardAdmission: a 0.3 card is admitted by the same rules as a
// 1.0 one (one JSONRPC endpoint, the configured one; modes; extensions;
// the bearer only as an HTTP Bearer scheme), and a card of an older
// version is refused as unsupported.
func TestLegacyCardAdmission(t *testing.T) {
	t.Parallel()
	const endpoint = "https://agent.example.test/rpc"
	remote := Remote{Name: "legacy", CardURL: "https://agent.example.test/card", Endpoint: endpoint}
	bearer := remote
	bearer.Bearer = &Bearer{Scheme: "bearer", Credential: "tok"}
	for _, tc := range []struct {
		name   string
		remote Remote
		edit   func(c map[string]any)
		reason CardReason
		bearer bool
	}{
		{name: "admitted", remote: remote, edit: func(map[string]any) {}},
		{name: "no additional interfaces", remote: remote, edit: func(c map[string]any) { delete(c, "additionalInterfaces") }},
		{name: "preferred transport defaults to JSONRPC", remote: remote, edit: func(c map[string]any) { delete(c, "preferredTransport") }},
		{name: "another endpoint", remote: remote, edit: func(c map[string]any) {
			c["url"] = "https://agent.example.test/other"
			delete(c, "additionalInterfaces")
		}, reason: CardEndpointMismatch},
		{name: "two JSONRPC endpoints", remote: remote, edit: func(c map[string]any) {
			c["additionalInterfaces"] = []any{map[string]any{"url": "https://agent.example.test/two", "transport": "JSONRPC"}}
		}, reason: CardInterface},
		{name: "only a GRPC endpoint", remote: remote, edit: func(c map[string]any) {
			c["preferredTransport"] = "GRPC"
			delete(c, "additionalInterfaces")
		}, reason: CardInterface},
		{name: "version 0.2", remote: remote, edit: func(c map[string]any) { c["protocolVersion"] = "0.2.6" }, reason: CardUnsupportedProtocol},
		{name: "text/plain input missing", remote: remote, edit: func(c map[string]any) { c["defaultInputModes"] = []any{"image/png"} }, reason: CardInputModes},
		{name: "required unknown extension", remote: remote, edit: func(c map[string]any) {
			c["capabilities"] = map[string]any{"extensions": []any{map[string]any{"uri": "urn:x", "required": true}}}
		}, reason: CardRequiredExtension},
		{name: "bearer", remote: bearer, edit: func(c map[string]any) {
			c["securitySchemes"] = map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}}
			c["security"] = []any{map[string]any{"bearer": []any{}}}
		}, bearer: true},
		{name: "bearer scheme is an API key", remote: bearer, edit: func(c map[string]any) {
			c["securitySchemes"] = map[string]any{"bearer": map[string]any{"type": "apiKey", "name": "k", "in": "header"}}
		}, reason: CardSecurity},
		{name: "requirement needs a credential", remote: remote, edit: func(c map[string]any) {
			c["securitySchemes"] = map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}}
			c["security"] = []any{map[string]any{"bearer": []any{}}}
		}, reason: CardSecurity},
	} {
		c := legacyCard(endpoint)
		tc.edit(c)
		card, err := AdmitCard(tc.remote, mustJSON(t, c))
		if tc.reason != "" {
			var ce *CardError
			if !errors.As(err, &ce) || ce.Reason != tc.reason {
				t.Fatalf("%s: %v, want %s", tc.name, err, tc.reason)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if card.ProtocolVersion != LegacyProtocolVersion || card.Bearer != tc.bearer || !card.Streaming {
			t.Fatalf("%s: %+v", tc.name, card)
		}
	}
	// A card that lists a JSONRPC 1.0 interface is spoken to in 1.0,
	// whatever 0.3 fields it also carries.
	c := legacyCard(endpoint)
	c["supportedInterfaces"] = []any{map[string]any{"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}}
	if card, err := AdmitCard(remote, mustJSON(t, c)); err != nil || card.ProtocolVersion != ProtocolVersion {
		t.Fatalf("%+v %v", card, err)
	}
}

// TestLegacyWire: to a 0.3 remote Pablo speaks 0.3's methods and objects
// (kind-discriminated parts, a lower-case role, blocking: false), sends
// no A2A-Version header, and folds the answers by the same rules.
func TestLegacyWire(t *testing.T) {
	t.Parallel()
	p := newFaultPeer(t)
	p.setCard(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(mustJSON(t, legacyCard(p.endpoint())))
	})
	var headers []string
	p.setRPC(func(w http.ResponseWriter, req rpcRequest) {
		switch req.Method {
		case "message/send":
			result(w, req, map[string]any{"kind": "task", "id": "t1", "contextId": "c1", "status": map[string]any{"state": "working"}})
		case "tasks/get":
			result(w, req, map[string]any{"kind": "task", "id": "t1", "contextId": "c1", "status": map[string]any{"state": "completed"},
				"artifacts": []any{map[string]any{"artifactId": "a1", "parts": []any{map[string]any{"kind": "text", "text": "legacy done"}}}}})
		}
	})
	p.srv.Config.Handler = withHeaders(p.srv.Config.Handler, &headers)
	r := newRunner(t, Options{Remotes: []Remote{p.remote()}, NewID: func() string { return "id-1" }})
	h := run(t, r, spec("peer", "hello", false))
	if res := h.Result(); res.Outcome.Status != outcome.Completed || res.Output != "legacy done" {
		t.Fatalf("%+v", res.Outcome)
	}
	if got := p.methods(); !slices.Equal(got, []string{"message/send", "tasks/get"}) {
		t.Fatalf("calls %v", got)
	}
	p.mu.Lock()
	body := string(p.calls[0].Body)
	p.mu.Unlock()
	want := `{"jsonrpc":"2.0","id":"id-1","method":"message/send","params":{"configuration":{"acceptedOutputModes":["text/plain"],"blocking":false},"message":{"kind":"message","messageId":"id-1","parts":[{"kind":"text","text":"hello"}],"role":"user"}}}`
	if body != want {
		t.Fatalf("sent\n%s\nwant\n%s", body, want)
	}
	for _, h := range headers {
		if strings.HasPrefix(strings.ToLower(h), "a2a-version") {
			t.Fatalf("a 0.3 request carried %q", h)
		}
	}
}

// withHeaders records the header names and values of every RPC request.
func withHeaders(next http.Handler, into *[]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/rpc" {
			for k, v := range r.Header {
				*into = append(*into, k+": "+strings.Join(v, ","))
			}
		}
		next.ServeHTTP(w, r)
	})
}

// TestA2AGo03Server: a2a-go's 0.3 compatibility server is admitted and
// answers, blocking and streamed; a slow blocking task is polled with
// tasks/get to its completion; a stopped one gets its tasks/cancel,
// which the server logs.
func TestA2AGo03Server(t *testing.T) {
	t.Parallel()
	peer := startGoPeer03(t)
	r := newRunner(t, Options{Remotes: []Remote{peerRemote(peer.base)}})
	card, err := r.Client().FetchCard(context.Background(), "fixture")
	if err != nil || card.ProtocolVersion != LegacyProtocolVersion {
		t.Fatalf("%+v %v", card, err)
	}
	for _, stream := range []bool{false, true} {
		h := run(t, r, spec("fixture", "echo:hello 0.3", stream))
		if res, rep := h.Result(), h.Report(); res.Outcome.Status != outcome.Completed || res.Output != "hello 0.3" || rep.State != "TASK_STATE_COMPLETED" {
			t.Fatalf("stream %v: %+v %+v", stream, res.Outcome, rep)
		}
	}
	h, err := r.StartRemote(context.Background(), spec("fixture", "gated", false))
	if err != nil {
		t.Fatal(err)
	}
	peer.waitLog(t, "a2a.method=GetTask a2a.duration_ns=")
	close(peer.gate)
	waitDone(t, h)
	if res := h.Result(); res.Outcome.Status != outcome.Completed || res.Output != "gated" {
		t.Fatalf("%+v", res.Outcome)
	}
	h, err = r.StartRemote(context.Background(), spec("fixture", "slow", false))
	if err != nil {
		t.Fatal(err)
	}
	waitBound(t, h.(*Handle))
	h.Cancel()
	waitDone(t, h)
	if res, rep := h.Result(), h.(*Handle).Report(); res.Outcome.Status != outcome.Cancelled || rep.CancelReceipt != "TASK_STATE_CANCELED" {
		t.Fatalf("%+v %+v", res.Outcome, rep)
	}
	peer.waitLog(t, "a2a.method=CancelTask a2a.duration_ns=")
}

// TestRealPeer03: the @a2a-js/sdk server's 0.3 compatibility layer (a
// card listing a JSONRPC 0.3 interface alone) is admitted and answers in
// 0.3, blocking (polled with tasks/get) and streamed; a stopped blocking
// task gets its tasks/cancel, which the server's executor logs.
func TestRealPeer03(t *testing.T) {
	t.Parallel()
	peer := startPeer(t, "server.mjs", "PEER_LEGACY=1")
	r := newRunner(t, Options{Remotes: []Remote{peerRemote(peer.base)}})
	card, err := r.Client().FetchCard(context.Background(), "fixture")
	if err != nil || card.ProtocolVersion != LegacyProtocolVersion {
		t.Fatalf("%+v %v", card, err)
	}
	for _, stream := range []bool{false, true} {
		h := run(t, r, spec("fixture", "echo:hello 0.3", stream))
		if res := h.Result(); res.Outcome.Status != outcome.Completed || res.Output != "hello 0.3" {
			t.Fatalf("stream %v: %+v", stream, res.Outcome)
		}
	}
	if res := run(t, r, spec("fixture", "work:300", false)).Result(); res.Outcome.Status != outcome.Completed || res.Output != "done after 300 ms" {
		t.Fatalf("%+v", res.Outcome)
	}
	peer.waitLog(t, `{"log":"rpc","method":"tasks/get"}`)
	h, err := r.StartRemote(context.Background(), spec("fixture", "slow", false))
	if err != nil {
		t.Fatal(err)
	}
	waitBound(t, h.(*Handle))
	h.Cancel()
	waitDone(t, h)
	res, rep := h.Result(), h.(*Handle).Report()
	if res.Outcome.Status != outcome.Cancelled || !rep.CancelSent || rep.CancelReceipt == "" {
		t.Fatalf("%+v %+v", res.Outcome, rep)
	}
	peer.waitLog(t, `"cancelTask","taskId":"`+rep.TaskID+`"`)
	peer.waitLog(t, `{"log":"rpc","method":"tasks/cancel"}`)
}
