package main

import (
	"context"
	"embed"
	"io/fs"
	"os"
	"path/filepath"
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
	d, err := loadDeployment(ctx, p, h, nil)
	if err != nil {
		return err
	}
	return runTask(ctx, h, p, d, "When was invoice INV-1042 paid? Cite the evidence.")
}
