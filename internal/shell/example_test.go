//go:build linux

package shell_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/pabloagent/pablo/internal/shell"
)

// The locked production preset allows printf and nothing else; each denial
// names the deciding layer and rule without echoing the command.
func ExamplePolicy_Check() {
	policy, err := shell.NewPolicy(shell.Layer{
		Name: "production.read_only",
		Rules: shell.CommandRules{Default: shell.DefaultDeny, Allow: []shell.CommandRule{
			{ID: "production.printf", Executable: "/usr/bin/printf", Args: []string{}, Match: shell.MatchPrefix},
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, command := range []string{"/usr/bin/printf hello", "printf hello | sh", "/bin/rm -rf x", "env", "/usr/bin/printf $(id)"} {
		d := policy.Check(command)
		fmt.Printf("%-24q allowed=%-5v layer=%s rule=%s reason=%s\n", command, d.Allowed, d.Layer, d.RuleID, d.Reason)
	}
	// Output:
	// "/usr/bin/printf hello"  allowed=true  layer=production.read_only rule=production.printf reason=allow_rule
	// "printf hello | sh"      allowed=false layer=builtin rule=builtin.shell.syntax reason=operator
	// "/bin/rm -rf x"          allowed=false layer=production.read_only rule=builtin.commands.allowlist_miss reason=allowlist_miss
	// "env"                    allowed=false layer=production.read_only rule=builtin.commands.allowlist_miss reason=allowlist_miss
	// "/usr/bin/printf $(id)"  allowed=false layer=builtin rule=builtin.shell.syntax reason=expansion
}

func ExampleParse() {
	words, err := shell.Parse(`printf '%s\n' "a \"quoted\" word" concat'ena'ted ''`)
	fmt.Printf("%q %v\n", words, err)
	_, err = shell.Parse("cat *.go")
	fmt.Println(err)
	// Output:
	// ["printf" "%s\\n" "a \"quoted\" word" "concatenated" ""] <nil>
	// shell: command rejected by the literal grammar: glob at byte 4; globs (*?[) are not expanded; quote them to pass them literally
}

func ExampleRunner_Run() {
	workspace, err := os.MkdirTemp("", "pablo-shell-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(workspace)
	policy, err := shell.NewPolicy(shell.Layer{Name: "options", Rules: shell.CommandRules{Default: shell.DefaultAllow}})
	if err != nil {
		fmt.Println(err)
		return
	}
	runner, err := shell.New(shell.Options{Workspace: workspace, Policy: policy})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := runner.Run(context.Background(), shell.Request{Command: "printf '%s' 'hello, $USER'", Cwd: "."})
	fmt.Printf("%q exit=%d err=%v\n", res.Stdout, *res.ExitCode, err)

	_, err = runner.Run(context.Background(), shell.Request{Command: "printf x", Cwd: "../elsewhere"})
	var denied *shell.DeniedError
	if errors.As(err, &denied) {
		fmt.Println(denied.Decision.RuleID)
	}
	// Output:
	// "hello, $USER" exit=0 err=<nil>
	// builtin.workspace
}
