package pablo

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// mutate changes every value it can reach from v through exported fields,
// map entries, slice elements and pointers: strings grow, numbers move,
// booleans flip, and each map gains an entry. It reports how many values
// it changed.
func mutate(v reflect.Value) int {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0
		}
		return mutate(v.Elem())
	case reflect.Struct:
		n := 0
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				n += mutate(v.Field(i))
			}
		}
		return n
	case reflect.Slice, reflect.Array:
		n := 0
		for i := range v.Len() {
			n += mutate(v.Index(i))
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return 0
		}
		n := 0
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			n += mutate(e)
			v.SetMapIndex(k, e)
		}
		if v.Type().Key().Kind() == reflect.String {
			v.SetMapIndex(reflect.ValueOf("added-by-the-host").Convert(v.Type().Key()), reflect.New(v.Type().Elem()).Elem())
			n++
		}
		return n
	}
	if !v.CanSet() {
		return 0
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "-changed")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	default:
		return 0
	}
	return 1
}

// TestDeploymentIsImmutable: whatever a host reaches from a Deployment —
// its options, its credential references, the slices and bytes its
// methods return, its Fingerprint field — it may change at will: the
// deployment's options, canonical form and fingerprint stay as loaded, and
// a runtime built from it afterwards enforces the loaded ceiling
// (max_model_calls = 3, which a host once raised to 1,000 under an
// unchanged fingerprint) and records the loaded fingerprint.
func TestDeploymentIsImmutable(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	turn := `{"text":["x"],"tool_calls":[{"name":"fs_list","arguments":{"path":"."}}]}`
	script := `{"turns":[` + strings.Repeat(turn+",", 5) + `{"text":["done"]}]}`
	d := scriptDeployment(t, dir, ws, script, `[credentials.token]
consumer = "mcp.env"
sources = [{ kind = "environment", name = "TOKEN" }]
[options.limits]
max_model_calls = 3
[options.skills]
activate = []
[options.policy.tools]
default = "allow"
deny = [{ id = "ops.no-write", value = "fs.write" }]
`)
	fingerprint := d.Fingerprint
	canonical := d.CanonicalJSON()
	explain := d.Explain()
	// Snapshots that share nothing with the deployment.
	optsJSON, _ := json.Marshal(d.c.Options)
	viewJSON, _ := json.Marshal(d.Options())
	credsJSON, _ := json.Marshal(d.Credentials())
	natives := d.NativeTools()
	overrides := d.AllowedRunOverrides()
	if n, _ := d.c.Options.Limits.MaxModelCalls.Value(); n != 3 {
		t.Fatalf("the deployment loaded max_model_calls %d", n)
	}

	// The host changes everything it can reach.
	view := d.Options()
	if n := mutate(reflect.ValueOf(&view).Elem()); n < 20 {
		t.Fatalf("mutated %d values of the options: the walk reaches too little to prove anything", n)
	}
	if mutate(reflect.ValueOf(d.Credentials())) == 0 {
		t.Fatal("the credential references offered nothing to mutate")
	}
	for _, b := range [][]byte{d.CanonicalJSON(), d.Explain()} {
		for i := range b {
			b[i] = 'x'
		}
	}
	mutate(reflect.ValueOf(d.NativeTools()))
	mutate(reflect.ValueOf(d.AllowedRunOverrides()))
	d.Fingerprint = "sha256:" + strings.Repeat("0", 64)

	if now, _ := json.Marshal(d.c.Options); !bytes.Equal(now, optsJSON) {
		t.Error("changing a copy of the options changed the deployment's")
	}
	if now, _ := json.Marshal(d.Options()); !bytes.Equal(now, viewJSON) {
		t.Error("changing a copy of the options changed the next copy")
	}
	if now, _ := json.Marshal(d.Credentials()); !bytes.Equal(now, credsJSON) {
		t.Error("changing a copy of the credential references changed the deployment's")
	}
	if !bytes.Equal(d.CanonicalJSON(), canonical) || !bytes.Equal(d.Explain(), explain) {
		t.Error("changing the returned bytes changed the canonical form")
	}
	if !slices.Equal(d.NativeTools(), natives) || !slices.Equal(d.AllowedRunOverrides(), overrides) {
		t.Error("changing a returned slice changed the deployment")
	}

	rt, err := d.NewRuntime(context.Background(), HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	obj, events := runTask(t, rt, "go")
	if o := obj.Outcome; o.Status != event.StatusLimitExceeded || o.Limit != outcome.LimitModelCalls || obj.Accounting.ModelCalls.N != 3 {
		t.Fatalf("outcome %+v after %v model calls: the loaded ceiling of 3 is not in force", o, obj.Accounting.ModelCalls)
	}
	for _, ev := range events {
		if ev.Type == event.RunStarted && (ev.Deployment == nil || ev.Deployment.Fingerprint != fingerprint) {
			t.Fatalf("run.started names the deployment %+v, want the fingerprint %s it loaded with", ev.Deployment, fingerprint)
		}
	}
}

// TestMCPOptionsAreTheHostsOwnCopy: the MCP options a Deployment returns
// share nothing with it. A host that changes a server's arguments, its
// environment's or headers' credential names, or drops a tool pin from
// what MCPOptions returned changes neither the deployment's options nor
// what the next MCPOptions call (and so the next task's MCP sessions)
// launches, connects with or checks.
func TestMCPOptionsAreTheHostsOwnCopy(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	d := scriptDeployment(t, dir, ws, `{"turns":[{"text":["done"]}]}`, `[credentials.token]
consumer = "mcp.env"
sources = [{ kind = "environment", name = "TOKEN" }]
[credentials.header]
consumer = "mcp.headers"
sources = [{ kind = "environment", name = "HEADER" }]
[options.mcp.servers.local]
transport = "stdio"
command = "/usr/bin/printf"
args = ["-mode", "ok"]
env = { TOKEN = "token" }
pins = { echo = "sha256:`+strings.Repeat("0", 64)+`" }
[options.mcp.servers.remote]
transport = "http"
url = "https://mcp.example.test/mcp"
headers = { authorization = "header" }
`)
	snapshot := func() string {
		o, err := d.MCPOptions(HostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(o.Servers)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	optsJSON, _ := json.Marshal(d.c.Options)
	before := snapshot()
	host, err := d.MCPOptions(HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range host.Servers {
		s := &host.Servers[i]
		for j := range s.Args {
			s.Args[j] = "--changed"
		}
		for k := range s.Env {
			s.Env[k] = "another-credential"
		}
		for k := range s.Headers {
			s.Headers[k] = "another-credential"
		}
		for k := range s.Pins {
			delete(s.Pins, k)
		}
	}
	if after := snapshot(); after != before {
		t.Errorf("changing the returned MCP options changed the next ones:\nbefore %s\nafter  %s", before, after)
	}
	if now, _ := json.Marshal(d.c.Options); !bytes.Equal(now, optsJSON) {
		t.Error("changing the returned MCP options changed the deployment's options")
	}
}
