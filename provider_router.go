package pablo

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/providers"
	"github.com/pabloagent/pablo/model"
)

// routeClassifier is a route's complexity router (options.routes.NAME.router)
// and, for each of its categories, the route entry the category selects.
type routeClassifier struct {
	r     *providers.Router
	entry map[string]int
}

// routerPath is where a fixture serves the evaluation-model endpoint.
const routerPath = "/v4/ai/evaluation-model"

// classifier builds the router of route name over the entries names it
// can select (its flattened entries whose models have what the route
// requires): its credential is the Vercel credential, resolved for exactly the
// evaluation-model endpoint (a fixture gets the fixed fake key, at the
// fixture's own origin).
func (b *modelBuilder) classifier(name string, rt config.Route, names []string) (*routeClassifier, error) {
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
	c := &routeClassifier{entry: map[string]int{}}
	opts := providers.RouterOptions{Endpoint: endpoint, Secret: secret, Instructions: r.Instructions,
		Timeout: time.Duration(r.TimeoutMS) * time.Millisecond}
	for _, cat := range sortedKeys(r.Categories) {
		rc := r.Categories[cat]
		i := slices.Index(names, rc.Model)
		if i < 0 {
			return nil, &ConfigError{Code: config.CodeInvalidValue, Option: ptr + "/categories/" + cat + "/model",
				Message: fmt.Sprintf("model %q is not an entry of route %q that has the route's required capabilities", rc.Model, name)}
		}
		c.entry[cat] = i
		opts.Categories = append(opts.Categories, providers.RouterCategory{Name: cat, Description: rc.Description})
	}
	var err error
	if c.r, err = providers.NewRouter(b.client, opts); err != nil {
		return nil, &ConfigError{Code: config.CodeInvalidValue, Option: ptr, Message: err.Error()}
	}
	return c, nil
}

// classifyRoute runs the task's complexity router, when its model is a
// route with one: one classification call at task start, on the ledger as
// a model call of the classifier (its usage spends the root's budgets),
// whose chosen category selects the entry the first operation starts at
// (selection_reason "complexity"). Children start at their narrowed
// route's first entry: only the root classifies.
func (s *step) classifyRoute() *event.Outcome {
	rm, ok := routeOf(s.conf.model)
	if !ok || rm.classifier == nil || s.conf.child {
		return nil
	}
	instructions := s.t.rt.opts.Instructions
	req := &model.Request{Instructions: instructions, Messages: []model.Message{{Role: model.RoleUser, Content: s.conf.input}}}
	call, o := s.beginCall(s.ctx, string(providers.Vercel), providers.RouterModel, nil, req)
	if o != nil {
		return o
	}
	c, err := rm.classifier.r.Classify(s.ctx, s.conf.input, instructions)
	var resp *model.Response
	if err != nil {
		err = toModelError(err)
	} else {
		resp = &model.Response{}
		if c.InputTokens != nil || c.OutputTokens != nil {
			resp.UsageReported = true
			resp.Usage = model.Usage{InputTokens: c.InputTokens, OutputTokens: c.OutputTokens}
		}
	}
	if o := s.endCall(call, resp, err, nil, nil); o != nil {
		return o
	}
	if s.route == nil {
		s.route = &routeSession{}
	}
	s.route.state.Select(rm.classifier.entry[c.Category], providers.SelectComplexity)
	return nil
}
