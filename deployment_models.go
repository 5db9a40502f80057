package pablo

import "fmt"

// httpModel builds the configured HTTP provider model (or route).
func (d *Deployment) httpModel(_ HostOptions) (Model, error) {
	return nil, fmt.Errorf("pablo: provider %q is not available in this build; pass HostOptions.Model or use --script: %w", d.Options.Model.Provider, ErrUnavailable)
}
