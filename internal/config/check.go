package config

import (
	"fmt"
	"strings"

	"github.com/pabloagent/pablo/authority"
)

// The cross-field rules run on the typed view of the resolved options,
// after the conditional defaults are written into the tree (complete.go)
// and before a file-backed output schema is pinned. Each rule is a small
// function; check runs them in the order the diagnostics have always been
// reported in, and the first failure wins.

// view is what the cross-field rules read: the typed options, whether
// output.schema is set (its file is read only after the rules pass), and
// which options the documents set rather than the defaults.
type view struct {
	o         *Options
	hasSchema bool
	prov      provenance
}

// explicit reports whether a document, an environment binding or an
// override set the option at ptr, rather than the defaults alone.
func (v *view) explicit(ptr string) bool {
	for _, origin := range v.prov[ptr] {
		if origin.Operation != "default" {
			return true
		}
	}
	return false
}

// check runs the cross-field rules over the resolved deployment.
func (d *Deployment) check(v *view) error {
	if err := d.checkRun(v); err != nil {
		return err
	}
	inUse, err := modelsInUse(v.o)
	if err != nil {
		return err
	}
	uses, err := d.checkModels(v, inUse)
	if err != nil {
		return err
	}
	for _, rule := range []func(*Options) ([]credUse, error){d.checkMCPServers, d.checkA2ARemotes, checkOTel} {
		more, err := rule(v.o)
		if err != nil {
			return err
		}
		uses = append(uses, more...)
	}
	if err := d.checkSandboxes(v.o); err != nil {
		return err
	}
	if err := d.checkCredentials(uses); err != nil {
		return err
	}
	if err := d.checkRuleIDs(); err != nil {
		return err
	}
	return d.checkAuthority(inUse)
}

// invalid is a config_invalid_value at ptr.
func invalid(ptr, format string, args ...any) error {
	return &Error{Code: CodeInvalidValue, Option: ptr, Message: fmt.Sprintf(format, args...)}
}

// checkRun holds the rules between the run's own options: writing needs
// the workspace tools, content capture a trace destination, output repair
// a schema, and a trace path no template but {session_id}.
func (d *Deployment) checkRun(v *view) error {
	o := v.o
	switch {
	case o.Filesystem.Write && !o.Filesystem.Enabled:
		return invalid("/options/filesystem/write", "filesystem.write = true needs filesystem.enabled = true")
	case o.Filesystem.Scope == "repo-write" && !o.Filesystem.Write:
		return invalid("/options/filesystem/scope", `scope = "repo-write" bounds writing: it needs filesystem.write = true`)
	case o.Trace.CaptureContent && o.Trace.Path == nil && !d.hostTrace:
		return invalid("/options/trace/capture_content", "capture_content needs a trace.path destination")
	case o.Output.Repair.Enabled && !v.hasSchema:
		return invalid("/options/output/repair/enabled", "output repair needs output.schema")
	}
	if p := o.Trace.Path; p != nil {
		if err := checkTemplate(p.Path, true); err != nil {
			return invalid("/options/trace/path/path", "%v", err)
		}
	}
	return nil
}

// checkTemplate allows "{session_id}" only where templates are allowed.
func checkTemplate(p string, allowed bool) error {
	rest := p
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			break
		}
		if !allowed || !strings.HasPrefix(rest[i:], "{session_id}") {
			return fmt.Errorf("the only template is the literal {session_id}")
		}
		rest = rest[i+len("{session_id}"):]
	}
	if strings.IndexByte(rest, '}') >= 0 {
		return fmt.Errorf("the only template is the literal {session_id}")
	}
	return nil
}

// checkOTel requires the OTLP endpoint to be https (or loopback) and the
// export batch to fit the queue; otel.headers names a credential.
func checkOTel(o *Options) ([]credUse, error) {
	t := &o.OTel
	if t.Exporter == "otlp" {
		if err := checkOTLPEndpoint(t.Endpoint); err != nil {
			return nil, err
		}
	}
	var uses []credUse
	if t.Headers != "" {
		uses = append(uses, credUse{ptr: "/options/otel/headers", name: t.Headers, consumer: authority.ConsumerOTelHeaders, destination: t.Endpoint, explicit: true})
	}
	if t.MaxExportBatchSize > t.MaxQueueSize {
		return nil, invalid("/options/otel/max_export_batch_size", "the export batch cannot exceed the queue size")
	}
	return uses, nil
}
