package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// CheckPaths resolves every path object of the deployment against its
// bindings, as a runtime would: the workspace and every Skill root must be
// existing directories inside their roots; model scripts, the trace path,
// MCP working directories, credential files and the authority layers' roots
// must resolve inside theirs. Nothing is read, started or sent, so offline
// commands (config validate) judge what run would refuse. All failures are
// returned, joined; each is a *PathError.
func (d *Deployment) CheckPaths() error {
	var errs []error
	check := func(what string, p PathRef, dir bool) {
		var err error
		if dir {
			if p.Base == "workspace" {
				var ws string
				if ws, err = d.Workspace(); err == nil {
					_, err = d.resolveDir(p, ws)
				}
			} else {
				_, err = d.resolveDir(p, "")
			}
		} else {
			_, err = d.ResolvePath(p)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	check("run.workspace", d.Options.Run.Workspace, true)
	for _, id := range slices.Sorted(maps.Keys(d.Options.Skills.Roots)) {
		check("skills.roots."+id, d.Options.Skills.Roots[id], true)
	}
	for _, name := range slices.Sorted(maps.Keys(d.Options.Skills.Files)) {
		check("skills.files."+name, d.Options.Skills.Files[name], false)
	}
	for _, name := range slices.Sorted(maps.Keys(d.Options.Skills.Packages)) {
		// A missing archive or repository is the Skill's finding
		// (source_missing), not the deployment's: only the path is checked.
		if p := d.Options.Skills.Packages[name]; p.Archive != nil {
			check("skills.packages."+name+".archive", *p.Archive, false)
		} else if p.Git != nil {
			check("skills.packages."+name+".git.repo", p.Git.Repo, false)
		}
	}
	if r := d.Options.Memory.Repository; r != nil {
		check("memory.repository", *r, true)
	}
	if o := d.Options.Memory.Ontology; o != nil {
		check("memory.ontology", *o, false)
	}
	if s := d.Options.Model.Script; s != nil {
		check("model.script", *s, false)
	}
	for _, name := range slices.Sorted(maps.Keys(d.Options.Models)) {
		if s := d.Options.Models[name].Script; s != nil {
			check("models."+name+".script", *s, false)
		}
	}
	if p := d.Options.Trace.Path; p != nil {
		check("trace.path", *p, false)
	}
	for _, name := range slices.Sorted(maps.Keys(d.Options.MCP.Servers)) {
		if cwd := d.Options.MCP.Servers[name].CWD; cwd != nil {
			check("mcp.servers."+name+".cwd", *cwd, true)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.credentials)) {
		for i, src := range d.credentials[name].Sources {
			if src.Path != nil {
				check(fmt.Sprintf("credentials.%s.sources[%d].path", name, i), *src.Path, false)
			}
		}
	}
	for _, l := range d.layers {
		for _, r := range l.WorkspaceRoots {
			check("authority "+l.ID+" workspace_roots", r, false)
		}
		for _, r := range l.SkillRoots {
			check("authority "+l.ID+" skill_roots", r, false)
		}
	}
	return errors.Join(errs...)
}

// SkillRoots resolves the configured Skills roots to directories.
func (d *Deployment) SkillRoots() (map[string]string, error) {
	roots := map[string]string{}
	for _, id := range sortedKeysOf(d.Options.Skills.Roots) {
		dir, err := d.ResolvePath(d.Options.Skills.Roots[id])
		if err != nil {
			return nil, err
		}
		roots[id] = dir
	}
	return roots, nil
}

// SkillFiles resolves the configured single-file Skills to paths. A file
// need not exist here: discovery reports a missing one (source_missing).
func (d *Deployment) SkillFiles() (map[string]string, error) {
	files := map[string]string{}
	for _, name := range sortedKeysOf(d.Options.Skills.Files) {
		p, err := d.ResolvePath(d.Options.Skills.Files[name])
		if err != nil {
			return nil, err
		}
		files[name] = p
	}
	return files, nil
}

// SkillPackagePaths resolves each package Skill's archive or repository
// path, by name.
func (d *Deployment) SkillPackagePaths() (map[string]string, error) {
	paths := map[string]string{}
	for _, name := range sortedKeysOf(d.Options.Skills.Packages) {
		p := d.Options.Skills.Packages[name]
		ref := p.Archive
		if p.Git != nil {
			ref = &p.Git.Repo
		}
		if ref == nil {
			continue
		}
		out, err := d.ResolvePath(*ref)
		if err != nil {
			return nil, err
		}
		paths[name] = out
	}
	return paths, nil
}

// SkillRootBounds returns, for every authority layer that writes
// skill_roots, the directories they resolve to (those that resolve): a
// Skills root must lie inside one of each layer's.
func (d *Deployment) SkillRootBounds() [][]string {
	var bounds [][]string
	for _, l := range d.layers {
		if !l.Has("skill_roots") {
			continue
		}
		var dirs []string
		for _, p := range l.SkillRoots {
			if dir, err := d.ResolvePath(p); err == nil {
				dirs = append(dirs, dir)
			}
		}
		bounds = append(bounds, dirs)
	}
	return bounds
}
