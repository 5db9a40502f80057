// Command conformanceclient is an MCP client built on package mcp for the
// MCP conformance suite's client scenarios. The suite runs it as
// `conformanceclient URL` with MCP_CONFORMANCE_SCENARIO naming the
// scenario and MCP_CONFORMANCE_CONTEXT holding the scenario's client
// credentials, if any; it opens a catalog on the URL (a loopback fixture),
// calls what the scenario expects, and closes.
//
// It is a headless host: its Authorizer approves every authorization by
// fetching the authorization URL itself (the suite's authorization server
// answers at once with the redirect), and its elicitation handler accepts
// with the defaults the form's schema names. Credentials come from the
// scenario's context through a credential resolver, as a deployment's
// would from its sources.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/mcp"
)

// clientMetadataURL is the client ID metadata document the suite expects.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformanceclient:", err)
		os.Exit(1)
	}
}

// scenarioContext is MCP_CONFORMANCE_CONTEXT.
type scenarioContext struct {
	ClientID         string `json:"client_id"`
	ClientSecret     string `json:"client_secret"`
	PrivateKeyPEM    string `json:"private_key_pem"`
	IdPClientID      string `json:"idp_client_id"`
	IdPIDToken       string `json:"idp_id_token"`
	IdPTokenEndpoint string `json:"idp_token_endpoint"`
}

func run() error {
	if len(os.Args) < 2 {
		return fmt.Errorf("usage: conformanceclient URL")
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sc scenarioContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	srv := mcp.Server{Name: "conformance", Transport: mcp.HTTP, URL: os.Args[len(os.Args)-1], Required: true,
		StartupTimeout: 15 * time.Second, OperationTimeout: 15 * time.Second}
	secrets := map[string]string{}
	if strings.HasPrefix(scenario, "auth/") {
		srv.OAuth = &mcp.OAuth{ClientMetadataURL: clientMetadataURL}
		switch scenario {
		case "auth/pre-registration":
			srv.OAuth = &mcp.OAuth{ClientID: sc.ClientID, ClientSecret: "client-secret"}
		case "auth/client-credentials-basic":
			srv.OAuth = &mcp.OAuth{Grant: mcp.GrantClientCredentials, ClientID: sc.ClientID, ClientSecret: "client-secret"}
		case "auth/client-credentials-jwt":
			srv.OAuth = &mcp.OAuth{Grant: mcp.GrantClientCredentials, ClientID: sc.ClientID, PrivateKey: "private-key"}
		case "auth/cross-app-access-complete-flow":
			srv.OAuth = &mcp.OAuth{Grant: mcp.GrantIdentityAssertion, ClientID: sc.ClientID, ClientSecret: "client-secret",
				IDToken: "id-token", IdentityProvider: sc.IdPTokenEndpoint, IdentityClientID: sc.IdPClientID}
		}
		secrets["client-secret"], secrets["private-key"], secrets["id-token"] = sc.ClientSecret, sc.PrivateKeyPEM, sc.IdPIDToken
	}
	auth, err := authority.New(authority.Config{MCPServers: map[string]authority.MCPServer{"conformance": {}}})
	if err != nil {
		return err
	}
	resolve := func(_ context.Context, name string, consumer authority.Consumer, destination string) (authority.Secret, error) {
		creds := []authority.Credential{{Name: name, Consumer: authority.ConsumerMCPOAuth, Sources: []authority.Source{{Kind: authority.SourceHost, Name: name}}, Destinations: []string{destination}}}
		r := authority.NewResolver(authority.ResolverOptions{Credentials: creds, Host: func(_ context.Context, n string) (string, bool, error) {
			v, ok := secrets[n]
			return v, ok && v != "", nil
		}})
		return r.Resolve(context.Background(), name, consumer, destination)
	}
	ctx := context.Background()
	cat, err := mcp.Open(ctx, mcp.Options{Servers: []mcp.Server{srv}, Authority: auth, Resolve: resolve, AllowLoopbackHTTP: true,
		Authorizer: headless{}, Elicit: acceptDefaults,
		ClientName: "pablo-conformance", ClientVersion: "0.1.0"})
	if err != nil {
		return err
	}
	defer cat.Close()
	call := func(tool, args string) error {
		res, err := cat.CallTool(ctx, authority.MCPTool("conformance", tool), json.RawMessage(args))
		if err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, res.Text)
		return nil
	}
	switch {
	case scenario == "initialize":
	case scenario == "tools_call":
		err = call("add_numbers", `{"a":5,"b":3}`)
	case scenario == "sse-retry":
		err = call("test_reconnection", `{}`)
	case scenario == "elicitation-sep1034-client-defaults":
		err = call("test_client_elicitation_defaults", `{}`)
	case strings.HasPrefix(scenario, "auth/"):
		err = call("test-tool", `{}`)
	default:
		return fmt.Errorf("scenario %q is not supported", scenario)
	}
	if err != nil {
		return err
	}
	return cat.Close()
}

// headless is an Authorizer for a fixture authorization server that
// approves at once: it fetches the authorization URL without following the
// redirect and hands back the redirect's query.
type headless struct{}

func (headless) RedirectURI(context.Context, string) (string, error) {
	return "http://localhost:3000/callback", nil
}

func (headless) Authorize(ctx context.Context, req mcp.AuthorizationRequest) (url.Values, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	if err != nil {
		return nil, err
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(hreq)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode/100 != 3 {
		return nil, errors.New("the authorization server did not redirect back")
	}
	return loc.Query(), nil
}

// acceptDefaults accepts every form with the defaults its schema names.
func acceptDefaults(_ context.Context, req mcp.Elicitation) (mcp.ElicitationResult, error) {
	return mcp.ElicitationResult{Action: mcp.ElicitAccept, Content: map[string]any{}}, nil
}
