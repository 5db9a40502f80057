package engine

import (
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/providers"
	"github.com/pabloagent/pablo/model"
)

// Classifier is a route's complexity router (options.routes.NAME.router)
// and, for each of its categories, the index of the route entry the
// category selects.
type Classifier struct {
	Router *providers.Router
	Entry  map[string]int
}

// classifyRoute runs the task's complexity router, when its model is a
// route with one: one classification call at task start, on the ledger as
// a model call of the classifier (its usage spends the root's budgets),
// whose chosen category selects the entry the first operation starts at
// (selection_reason "complexity"). Children start at their narrowed
// route's first entry: only the root classifies.
func (s *step) classifyRoute() *event.Outcome {
	rm, ok := s.conf.route, s.conf.route != nil
	if !ok || rm.classifier == nil || s.conf.child {
		return nil
	}
	instructions := s.t.rt.opts.Instructions
	req := &model.Request{Instructions: instructions, Messages: []model.Message{{Role: model.RoleUser, Content: s.conf.input}}}
	call, _, o := s.beginCall(s.ctx, string(providers.Vercel), providers.RouterModel, nil, req, nil)
	if o != nil {
		return o
	}
	c, err := rm.classifier.Router.Classify(s.ctx, s.conf.input, instructions)
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
		s.route = &RouteSession{}
	}
	s.route.state.Select(rm.classifier.Entry[c.Category], providers.SelectComplexity)
	return nil
}
