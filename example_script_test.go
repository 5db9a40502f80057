package pablo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pabloagent/pablo"
)

// Load a script file for an offline model, as `pablo run --script` does; a
// file that is not there is refused as a script error that says so.
func ExampleLoadScript() {
	dir, _ := os.MkdirTemp("", "pablo-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "turns.json")
	os.WriteFile(path, []byte(`{"turns": [{"text": ["Nothing to do."]}]}`), 0o600)

	s, err := pablo.LoadScript(context.Background(), path)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Turns(), "turn; model:", pablo.NewScriptModel(s).Info().Provider)

	_, err = pablo.LoadScript(context.Background(), filepath.Join(dir, "missing.json"))
	fmt.Println(errors.Is(err, pablo.ErrScript))
	// Output:
	// 1 turn; model: script
	// true
}
