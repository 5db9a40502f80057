package endpoint

import (
	"errors"
	"net/url"
	"testing"
)

func TestPlainHTTPOnlyToLoopbackWhenAllowed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		raw           string
		allow, refuse bool
	}{
		{"https://example.test/x", true, false},
		{"http://localhost:4318/v1/traces", true, true},
		{"http://127.0.0.2:1/", true, true},
		{"http://[::1]:1/", true, true},
		{"http://localhost.example.test/", false, true},
		{"http://10.0.0.1/", false, true},
		{"ftp://localhost/", false, true},
	} {
		u, _ := url.Parse(c.raw)
		if err := CheckScheme(u, true); (err == nil) != c.allow || (err != nil && !errors.Is(err, ErrPlainHTTP)) {
			t.Errorf("%s allowed: %v", c.raw, err)
		}
		if err := CheckScheme(u, false); (err != nil) != c.refuse {
			t.Errorf("%s without the allowance: %v", c.raw, err)
		}
	}
}
