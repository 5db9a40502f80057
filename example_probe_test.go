package pablo_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/deployment"
)

// Probe the configured provider before a run, as `pablo doctor --probe
// provider` does: the credential is resolved for exactly the model's
// consumer and endpoint, one short request is sent, and a refused key
// comes back as a reason code, never as the key or the body.
func ExampleDeployment_ProbeProvider() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"bad key"}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	dir, _ := os.MkdirTemp("", "pablo-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(`schema_version = 1
[options.model]
provider = "openai_compatible"
id = "local-model"
credential = "local"
endpoint = "`+srv.URL+`/v1"

[credentials.local]
consumer = "provider.openai_compatible"
sources = [{ kind = "environment", name = "LOCAL_KEY" }]
`), 0o600)
	d, err := pablo.Load(pablo.LoadOptions{Config: filepath.Join(dir, "deployment.toml"),
		Bindings: map[string]string{"workspace": dir}, LoopbackHTTP: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range d.ModelProfiles() {
		fmt.Println(m.Option, m.Provider, m.Model, m.Consumer)
	}
	env := func(name string) (string, bool) { return "not-the-right-key", name == "LOCAL_KEY" }
	r := d.ProbeProvider(context.Background(), deployment.ProviderProbeOptions{LookupEnv: env})
	fmt.Println(r.Code)
	// Output:
	// /options/model openai_compatible local-model provider.openai_compatible
	// provider_auth_rejected
}
