package a2a_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/pabloagent/pablo/a2a"
	"github.com/pabloagent/pablo/children"
)

// ExampleRunner runs one remote child against a peer on loopback: the
// runner admits the peer's card, sends the one text part and keeps the
// task's artifact as the child's output.
func ExampleRunner() {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("/card", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"name":"reviewer","supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
			"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}`, srv.URL+"/rpc")
	})
	mux.HandleFunc("/rpc", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"},
			"artifacts":[{"artifactId":"a1","parts":[{"text":"looks good"}]}]}}}`)
	})
	runner, err := a2a.NewRunner(a2a.Options{
		Remotes:           []a2a.Remote{{Name: "reviewer", CardURL: srv.URL + "/card", Endpoint: srv.URL + "/rpc"}},
		AllowLoopbackHTTP: true,
		NewID:             func() string { return "req-1" },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	text, stream := "review the change", false
	h, err := runner.StartRemote(context.Background(), children.RemoteSpec{AgentID: "a1", ParentID: "root", RemoteRequest: children.RemoteRequest{
		Remote: "reviewer", Parts: []children.Part{{Text: &text}}, AcceptedOutputModes: []string{"text/plain"}, Stream: &stream,
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	<-h.Done()
	res, report := h.Result(), h.(*a2a.Handle).Report()
	fmt.Println(res.Outcome.Status, res.Output, report.TaskID, report.State)
	// Output: completed looks good t1 TASK_STATE_COMPLETED
}

// ExampleAdmitCard shows a refusal naming exactly why.
func ExampleAdmitCard() {
	remote := a2a.Remote{Name: "reviewer", CardURL: "https://agent.example.test/card", Endpoint: "https://agent.example.test/rpc"}
	_, err := a2a.AdmitCard(remote, []byte(`{"supportedInterfaces":[{"url":"https://elsewhere.example.test/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
		"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"]}`))
	fmt.Println(err)
	// Output: a2a: remote "reviewer": agent card refused (endpoint_mismatch): the JSONRPC interface's url is not the configured endpoint "https://agent.example.test/rpc"
}

// ExampleClient_Probe fetches and admits every configured card, as `pablo
// a2a probe` does: nothing is sent to an endpoint.
func ExampleClient_Probe() {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("/card", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"name":"reviewer","version":"2","supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
			"defaultInputModes":["text/plain"],"defaultOutputModes":["application/json"],"skills":[{"id":"review","name":"Review"}]}`, srv.URL+"/rpc")
	})
	c, err := a2a.NewClient(a2a.Options{
		Remotes: []a2a.Remote{
			{Name: "reviewer", CardURL: srv.URL + "/card", Endpoint: srv.URL + "/rpc"},
			{Name: "elsewhere", CardURL: srv.URL + "/card", Endpoint: srv.URL + "/other"},
		},
		AllowLoopbackHTTP: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.CloseIdleConnections()
	for _, p := range c.Probe(context.Background()) {
		if p.Admitted {
			fmt.Println(p.Remote, "admitted:", p.Card.Name, p.Card.Version, p.Card.Skills)
		} else {
			fmt.Println(p.Remote, "refused:", p.Reason)
		}
	}
	// Output:
	// reviewer admitted: reviewer 2 [review]
	// elsewhere refused: endpoint_mismatch
}
