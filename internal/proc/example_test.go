//go:build linux

package proc_test

import (
	"context"
	"fmt"
	"os/exec"

	"github.com/pabloagent/pablo/internal/proc"
)

// A one-shot command with bounded capture: the group is killed and proven
// gone before Wait returns.
func ExampleStart() {
	cmd := exec.Command("/bin/sh", "-c", "echo hello; sleep 60 &")
	p, err := proc.Start(context.Background(), cmd, proc.Options{MaxStdout: 1024, StopOnOverflow: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := p.Wait()
	fmt.Printf("%q exit=%d cleanup=%v\n", res.Stdout, res.ExitCode, err)
	// Output: "hello\n" exit=0 cleanup=<nil>
}
