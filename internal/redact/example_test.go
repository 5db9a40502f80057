package redact_test

import (
	"fmt"

	"github.com/pabloagent/pablo/internal/redact"
)

func ExampleSet() {
	var secrets redact.Set
	secrets.Add("sk-live-0123456789")
	fmt.Println(secrets.String("curl -H 'Authorization: Bearer sk-live-0123456789' ..."))
	// Output: curl -H 'Authorization: Bearer [redacted]' ...
}
