package pablo

import (
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/model"
)

// Router is an optional capability of a Model, named as http.Flusher is:
// the model serves a configured route (a deployment's model_route, as
// [Deployment.NewRuntime] and [Deployment.FixtureModel] build it), which
// falls back across ordered entries. The runtime drives a route itself: it
// keeps a task's selection sticky across turns, accounts for each attempt
// as its own model call, classifies the first request, narrows the route
// for a child that names entries, and lists the entries in the dispatch
// snapshot. Only Pablo builds routes, so the interface is sealed; a host
// that wraps a route embeds the Router it wraps (struct{ pablo.Router }),
// which forwards the capability, and the runtime sees the route through
// the wrapper.
type Router interface {
	model.Model
	route() *engine.Route
}

// routed is a route Pablo built, as a Router.
type routed struct{ *engine.Route }

func (r routed) route() *engine.Route { return r.Route }

// routeOf is the route m serves, when m is a [Router].
func routeOf(m model.Model) (*engine.Route, bool) {
	r, ok := m.(Router)
	if !ok {
		return nil, false
	}
	return r.route(), true
}

// wrapRoute is a route the engine built, as a Router.
func wrapRoute(r *engine.Route) model.Model { return routed{r} }
