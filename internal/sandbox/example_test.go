package sandbox_test

import (
	"context"
	"fmt"
	"os"

	"github.com/pabloagent/pablo/internal/proc"
	"github.com/pabloagent/pablo/internal/sandbox"
)

// A command run in the default sandbox: the workspace read-only, no
// network, an unprivileged user.
func ExampleLauncher_Command() {
	l := sandbox.NewLauncher("")
	ws, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(ws)
	c, err := l.Command(sandbox.Profile{}, sandbox.Spec{
		Path: "/bin/sh", Args: []string{"/bin/sh", "-c", "id -u; touch made || echo read-only"},
		Env: []string{"PATH=/usr/bin:/bin"}, Workspace: ws,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := c.Start(context.Background(), proc.Options{MaxStdout: 4096})
	if err != nil {
		c.Close()
		fmt.Println(err)
		return
	}
	res, _ := p.Wait()
	fmt.Print(c.Profile, "\n", string(res.Stdout))
	fmt.Println(c.Finish(res.Stderr))
	// Output:
	// required filesystem=read-only network=deny
	// 65534
	// read-only
	// <nil>
}
