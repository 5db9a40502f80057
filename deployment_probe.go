package pablo

import (
	"context"

	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/internal/probe"
)

// ModelProfiles lists the model profiles a run of d may use, in route
// order: the selected model, or every entry of the selected route a run
// can select (one whose model lacks what the route requires is left out).
func (d *Deployment) ModelProfiles() []deployment.ModelProfile { return probe.ModelProfiles(d.c) }

// ProbeProvider sends one fixed short request (no tools, a small output
// allowance) through the first model a run would use, with its credential
// resolved for exactly its consumer and endpoint, and reports what came
// back. A 2xx event stream passes; its body is not evaluated. The caller
// bounds the probe with ctx. It is `pablo doctor --probe provider`.
func (d *Deployment) ProbeProvider(ctx context.Context, opts deployment.ProviderProbeOptions) deployment.ProviderProbe {
	return probe.Provider(ctx, d.c, opts, d.FixtureModel)
}
