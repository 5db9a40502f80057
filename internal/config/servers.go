package config

import (
	"net/url"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/endpoint"
)

// checkMCPServers requires each MCP server to take exactly the keys of its
// transport, and an https URL over http; its env and header values name
// credentials, each bound to the one variable or header it fills.
func (d *Deployment) checkMCPServers(o *Options) ([]credUse, error) {
	var uses []credUse
	for _, name := range sortedKeysOf(o.MCP.Servers) {
		ptr := "/options/mcp/servers" + pointer(name)
		s := o.MCP.Servers[name]
		switch s.Transport {
		case "stdio":
			if s.Command == "" {
				return nil, invalid(ptr+"/command", "MCP server %q: stdio servers need an absolute command", name)
			}
			if k := setKey(map[string]bool{"url": s.URL != "", "headers": s.Headers != nil, "oauth": s.OAuth != nil}, "url", "headers", "oauth"); k != "" {
				return nil, invalid(ptr+pointer(k), "MCP server %q: %s is only for transport = \"http\"", name, k)
			}
			for _, v := range sortedKeysOf(s.Env) {
				uses = append(uses, credUse{ptr: ptr + "/env" + pointer(v), name: s.Env[v], consumer: authority.ConsumerMCPEnv, destination: "mcp:" + name + ":env:" + v, explicit: true})
			}
		case "http":
			if s.URL == "" {
				return nil, invalid(ptr+"/url", "MCP server %q: http servers need url", name)
			}
			set := map[string]bool{"command": s.Command != "", "args": s.Args != nil, "cwd": s.CWD != nil, "env": s.Env != nil}
			if k := setKey(set, "command", "args", "cwd", "env"); k != "" {
				return nil, invalid(ptr+pointer(k), "MCP server %q: %s is only for transport = \"stdio\"", name, k)
			}
			if err := d.checkRemote(ptr+"/url", s.URL); err != nil {
				return nil, err
			}
			for _, h := range sortedKeysOf(s.Headers) {
				uses = append(uses, credUse{ptr: ptr + "/headers" + pointer(h), name: s.Headers[h], consumer: authority.ConsumerMCPHeaders, destination: "mcp:" + name + ":header:" + h, explicit: true})
			}
			if o := s.OAuth; o != nil {
				if _, ok := s.Headers["authorization"]; ok {
					return nil, invalid(ptr+"/headers/authorization", "MCP server %q: the authorization header carries the OAuth access token; configure oauth or the header, not both", name)
				}
				if o.Grant == "client_credentials" && (o.ClientID == "" || (o.ClientSecret == "" && o.PrivateKey == "")) {
					return nil, invalid(ptr+"/oauth", "MCP server %q: grant client_credentials needs client_id and client_secret or private_key", name)
				}
				if o.Grant == "identity_assertion" && (o.ClientID == "" || o.IDToken == "" || o.IdentityProvider == "") {
					return nil, invalid(ptr+"/oauth", "MCP server %q: grant identity_assertion needs client_id, id_token and identity_provider", name)
				}
				if o.IDToken != "" {
					uses = append(uses, credUse{ptr: ptr + "/oauth/id_token", name: o.IDToken, consumer: authority.ConsumerMCPOAuth, destination: "mcp:" + name + ":oauth:id_token", explicit: true})
				}
				if o.ClientSecret != "" && o.PrivateKey != "" {
					return nil, invalid(ptr+"/oauth/private_key", "MCP server %q: client_secret and private_key exclude each other", name)
				}
				if (o.ClientSecret != "" || o.PrivateKey != "") && o.ClientID == "" {
					return nil, invalid(ptr+"/oauth/client_id", "MCP server %q: client_secret and private_key belong to a pre-registered client: set client_id", name)
				}
				if o.ClientSecret != "" {
					uses = append(uses, credUse{ptr: ptr + "/oauth/client_secret", name: o.ClientSecret, consumer: authority.ConsumerMCPOAuth, destination: "mcp:" + name + ":oauth:client_secret", explicit: true})
				}
				if o.PrivateKey != "" {
					uses = append(uses, credUse{ptr: ptr + "/oauth/private_key", name: o.PrivateKey, consumer: authority.ConsumerMCPOAuth, destination: "mcp:" + name + ":oauth:private_key", explicit: true})
				}
			}
		default:
			return nil, invalid(ptr+"/transport", "MCP server %q needs transport = \"stdio\" or \"http\"", name)
		}
	}
	return uses, nil
}

// setKey returns the first of keys that set says is written, or "".
func setKey(set map[string]bool, keys ...string) string {
	for _, k := range keys {
		if set[k] {
			return k
		}
	}
	return ""
}

// checkA2ARemotes requires each remote's card URL and endpoint to be https;
// a bearer names a credential bound to the remote's endpoint.
func (d *Deployment) checkA2ARemotes(o *Options) ([]credUse, error) {
	var uses []credUse
	for _, name := range sortedKeysOf(o.A2A.Remotes) {
		ptr := "/options/a2a/remotes" + pointer(name)
		r := o.A2A.Remotes[name]
		for _, u := range []struct{ key, url string }{{"card_url", r.CardURL}, {"endpoint", r.Endpoint}} {
			if u.url == "" {
				return nil, invalid(ptr+pointer(u.key), "remote %q needs %s", name, u.key)
			}
			if err := d.checkRemote(ptr+pointer(u.key), u.url); err != nil {
				return nil, err
			}
		}
		if b := r.Bearer; b != nil {
			if b.Scheme == "" {
				return nil, invalid(ptr+"/bearer/scheme", "bearer needs scheme and credential")
			}
			if b.Credential == "" {
				return nil, invalid(ptr+"/bearer/credential", "bearer needs scheme and credential")
			}
			uses = append(uses, credUse{ptr: ptr + "/bearer/credential", name: b.Credential, consumer: authority.ConsumerA2ABearer, destination: r.Endpoint, explicit: true})
		}
	}
	return uses, nil
}

// checkRemote requires https, except a loopback host fixture when the host
// asked for one and the deployment is not locked.
func (d *Deployment) checkRemote(ptr, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return invalid(ptr, "not a URL")
	}
	if endpoint.CheckScheme(u, d.loopbackHTTP) == nil {
		return nil
	}
	msg := endpoint.ErrPlainHTTP.Error()
	if endpoint.IsLoopback(u) {
		msg += " (plain http to loopback is only a host fixture, never under lock)"
	}
	return invalid(ptr, "%s", msg)
}

// checkOTLPEndpoint requires https for the OTLP exporter except to a
// loopback host (a collector on this host, as the reference's default
// http://localhost:4318 is). Unlike a model or MCP endpoint, no host switch
// is needed for that and lock does not forbid it: the spans and the
// otel.headers credential never leave the host over plain HTTP.
func checkOTLPEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return invalid("/options/otel/endpoint", "not a URL")
	}
	if endpoint.CheckScheme(u, true) != nil {
		return invalid("/options/otel/endpoint", "the OTLP endpoint must use https; plain http is allowed only to a loopback host (localhost, 127.0.0.1, ::1)")
	}
	return nil
}
