package pablo

import "github.com/pabloagent/pablo/internal/shell"

// shellRunner builds shell.run for a workspace directory.
func (d *Deployment) shellRunner(workspace string) (*shell.Runner, error) {
	opts, err := d.c.ShellOptions(workspace)
	if err != nil {
		return nil, err
	}
	return shell.New(opts)
}
