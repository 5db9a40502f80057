package pablo_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/pabloagent/pablo"
)

// A host runs a deployment against a local fake provider: FixtureModel
// points the configured provider at a loopback URL with a fixed fake key.
func ExampleDeployment_FixtureModel() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"All paid.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()

	dir, _ := os.MkdirTemp("", "pablo-example")
	defer os.RemoveAll(dir)
	os.Mkdir(filepath.Join(dir, "work"), 0o700)
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(`schema_version = 1
[options.model]
provider = "openai_compatible"
id = "llama3"
endpoint = "https://models.example/v1/chat/completions"
[options.shell]
enabled = false
`), 0o600)
	d, err := pablo.Load(pablo.LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": filepath.Join(dir, "work")}})
	if err != nil {
		panic(err)
	}
	m, err := d.FixtureModel(srv.URL + "/v1/chat/completions")
	if err != nil {
		panic(err)
	}
	rt, err := d.NewRuntime(context.Background(), pablo.HostOptions{Model: m})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	obj, err := rt.Run(context.Background(), "Was everything paid?")
	if err != nil {
		panic(err)
	}
	fmt.Println(obj.Outcome.Status, *obj.Outcome.Output)
	// Output: completed All paid.
}
