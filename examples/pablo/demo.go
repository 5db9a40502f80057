package main

import (
	"context"
	"embed"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pabloagent/pablo"
)

//go:embed demo
var demoFiles embed.FS

// demoCommand implements `pablo demo`: the bundled offline deployment, run
// with its scripted model in a fresh temporary workspace.
func demoCommand(ctx context.Context, args []string, h *host) error {
	p, err := parseArgs(args, "demo")
	if err != nil {
		return err
	}
	if len(p.args) > 0 {
		return usagef("pablo demo takes no task; it runs the bundled one")
	}
	dir, err := os.MkdirTemp("", "pablo-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sub, _ := fs.Sub(demoFiles, "demo")
	if err := os.CopyFS(dir, sub); err != nil {
		return err
	}
	p.values["config"] = []string{filepath.Join(dir, "deployment.toml")}
	p.values["bind"] = []string{"workspace=" + filepath.Join(dir, "work"), "skills=" + filepath.Join(dir, "skills")}
	var overrides []pablo.Override
	if p.bools["capture-content"] {
		if p.one("trace") == "" {
			return usagef("--capture-content needs --trace PATH: the demo writes no trace otherwise")
		}
		overrides = append(overrides, pablo.Override{Target: "trace.capture_content", Value: true})
	}
	d, err := loadDeployment(ctx, p, h, overrides)
	if err != nil {
		return err
	}
	return runTask(ctx, h, p, d, "When was invoice INV-1042 paid? Cite the evidence.")
}
