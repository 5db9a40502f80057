package pablo

import (
	"context"
	"fmt"

	"github.com/pabloagent/pablo/authority"
)

// mcpCatalogs returns the per-task opener of the deployment's MCP servers:
// each task gets fresh sessions and fresh credential resolution for the
// servers its authority admits.
func (d *Deployment) mcpCatalogs(_ HostOptions, _ *authority.Set) (func(ctx context.Context, task TaskInfo) ([]ToolCatalog, error), error) {
	return nil, fmt.Errorf("pablo: MCP servers are configured but the MCP catalog is not wired: %w", ErrUnavailable)
}
