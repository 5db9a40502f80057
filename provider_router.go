package pablo

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/internal/providers"
)

// routerPath is where a fixture serves the evaluation-model endpoint.
const routerPath = "/v4/ai/evaluation-model"

// classifier builds the router of route name over the entries names it
// can select (its flattened entries whose models have what the route
// requires): its credential is the Vercel credential, resolved for exactly the
// evaluation-model endpoint (a fixture gets the fixed fake key, at the
// fixture's own origin).
func (b *modelBuilder) classifier(name string, rt config.Route, names []string) (*engine.Classifier, error) {
	r := rt.Router
	ptr := "/options/routes/" + name + "/router"
	endpoint, secret := b.routerEndpoint, fixtureKey
	if b.fixture != "" {
		u, err := url.Parse(b.fixture)
		if err != nil {
			return nil, err // checked by checkFixtureEndpoint
		}
		endpoint = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: routerPath}).String()
	} else {
		s, err := b.resolver.Resolve(context.Background(), r.Credential, authority.ConsumerVercel, config.RouterEndpoint)
		if err != nil {
			return nil, fmt.Errorf("pablo: router credential at %s: %w", ptr, err)
		}
		secret = s.Reveal()
	}
	c := &engine.Classifier{Entry: map[string]int{}}
	opts := providers.RouterOptions{Endpoint: endpoint, Secret: secret, Instructions: r.Instructions,
		Timeout: time.Duration(r.TimeoutMS) * time.Millisecond}
	for _, cat := range slices.Sorted(maps.Keys(r.Categories)) {
		rc := r.Categories[cat]
		i := slices.Index(names, rc.Model)
		if i < 0 {
			return nil, &config.Error{Code: config.CodeInvalidValue, Option: ptr + "/categories/" + cat + "/model",
				Message: fmt.Sprintf("model %q is not an entry of route %q that has the route's required capabilities", rc.Model, name)}
		}
		c.Entry[cat] = i
		opts.Categories = append(opts.Categories, providers.RouterCategory{Name: cat, Description: rc.Description})
	}
	var err error
	if c.Router, err = providers.NewRouter(b.client, opts); err != nil {
		return nil, &config.Error{Code: config.CodeInvalidValue, Option: ptr, Message: err.Error()}
	}
	return c, nil
}
