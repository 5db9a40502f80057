package pablo_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/pabloagent/pablo"
)

// Inspect what a deployment declares before running it: the credentials
// it resolves (where from, never the value) and how its literal command
// policy parses a command line.
func ExampleDeployment_Credentials() {
	dir, _ := os.MkdirTemp("", "pablo-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(`schema_version = 1
[credentials.otel]
consumer = "otel.headers"
sources = [{ kind = "environment", name = "OTEL_TOKEN" }]

[options.shell]
enabled = true
[options.shell.sandbox]
mode = "off"
[options.shell.commands]
default = "deny"
allow = [{ id = "t.printf", executable = "/usr/bin/printf", args = [], match = "prefix" }]
`), 0o600)
	d, err := pablo.Load(pablo.LoadOptions{Config: filepath.Join(dir, "deployment.toml"),
		Bindings: map[string]string{"workspace": dir}})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := d.Credentials()["otel"]
	fmt.Println(c.Consumer, c.Sources[0].Kind, c.Sources[0].Name)
	cmd, ok := d.ParseShellCommand("printf 'hello world'")
	fmt.Printf("%v %q\n", ok, cmd.Argv)
	// Output:
	// otel.headers environment OTEL_TOKEN
	// true ["printf" "hello world"]
}
