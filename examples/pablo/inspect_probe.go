package main

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/graph"
)

// newProbeToken is the per-process token a Probe form carries: a page
// served by this process holds it, a page of another origin cannot read
// it, so no other site can make the inspector start a server.
func newProbeToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// probe runs the probe `pablo graph --probe` runs for one stack (its MCP
// servers started as policy admits them, none required, no tool called;
// its remotes' cards fetched without a credential) and shows the probed
// graph from then on. It is the inspector's only write action: a POST
// bound to the per-process token, from this origin.
func (in *inspector) probe(w http.ResponseWriter, r *http.Request) {
	// The request's Host is one no DNS rebinding can take over
	// (hostAllowed, checked for every request): a page a rebound name
	// served would be of that name's origin, read the token and post it
	// back.
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host != r.Host {
			http.Error(w, "a probe is accepted only from the inspector's own pages", http.StatusForbidden)
			return
		}
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
		return
	}
	if in.token == "" || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("token")), []byte(in.token)) != 1 {
		http.Error(w, "the probe token is missing or not this process's: reload the MCP page and press Probe again", http.StatusForbidden)
		return
	}
	s := in.stack(r.PostForm.Get("stack"))
	if s == nil {
		http.Error(w, "no such stack", http.StatusNotFound)
		return
	}
	// The options `pablo graph --probe` computes with, and the admitted
	// tools' definitions, which the MCP page shows.
	opts := graph.Options{LookupEnv: in.host.lookupEnv, Bubblewrap: in.host.bubblewrap}
	var tools []authority.ToolSpec
	var err error
	if opts.Health, tools, err = probeMCP(r.Context(), s.d, in.host); err != nil {
		http.Error(w, "probe: "+err.Error(), http.StatusBadGateway)
		return
	}
	if opts.Cards, err = probeCards(r.Context(), s.d, in.host); err != nil {
		http.Error(w, "probe: "+err.Error(), http.StatusBadGateway)
		return
	}
	g, err := s.d.Graph(r.Context(), opts)
	if err != nil {
		http.Error(w, "probe: "+err.Error(), http.StatusInternalServerError)
		return
	}
	in.mu.Lock()
	s.Graph, s.opts = g, opts
	s.Descriptions = map[authority.ID]string{}
	for _, t := range tools {
		s.Descriptions[t.ID] = t.Description
	}
	in.mu.Unlock()
	http.Redirect(w, r, "/mcp#stack-"+url.PathEscape(s.Name), http.StatusSeeOther)
}
