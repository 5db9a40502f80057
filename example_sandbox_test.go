package pablo_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pabloagent/pablo"
)

// Ask what sandbox each process of a run would get before running it, as
// `pablo doctor` does: here shell.run is configured unconfined, which is
// the host's explicit choice, so no bubblewrap is needed.
func ExampleDeployment_CheckSandbox() {
	dir, _ := os.MkdirTemp("", "pablo-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(`schema_version = 1
[options.shell]
enabled = true
[options.shell.sandbox]
mode = "off"
`), 0o600)
	d, err := pablo.Load(pablo.LoadOptions{Config: filepath.Join(dir, "deployment.toml"),
		Bindings: map[string]string{"workspace": dir}})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := d.CheckSandbox(context.Background(), "")
	fmt.Println(c.Processes, c.Required, c.Err)
	// Output:
	// [shell.run off] false <nil>
}
