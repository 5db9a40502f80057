package config

import (
	"strings"
	"testing"
)

const localModel = "schema_version = 1\n[options.model]\nprovider = \"openai_compatible\"\nid = \"llama3.1\"\nendpoint = %q\n"

func localDoc(endpoint string, extra string) string {
	return strings.Replace(localModel, "%q", `"`+endpoint+`"`, 1) + extra
}

// TestLocalModelServerOverLoopbackHTTP: a model endpoint over plain http
// to this host's loopback interface (a local model server) loads without
// any host switch, in each of its three spellings.
func TestLocalModelServerOverLoopbackHTTP(t *testing.T) {
	for _, ep := range []string{"http://127.0.0.1:11434/v1/chat/completions", "http://[::1]:8000/v1/chat/completions", "http://localhost:8080/v1/chat/completions"} {
		if _, err := loadString(t, localDoc(ep, "")); err != nil {
			t.Fatalf("%s: %v", ep, err)
		}
	}
}

// TestPlainHTTPModelEndpointOffTheHostIsRefused: plain http anywhere but
// the loopback interface is refused, and the refusal says what is allowed.
func TestPlainHTTPModelEndpointOffTheHostIsRefused(t *testing.T) {
	for _, ep := range []string{"http://10.0.0.5:11434/v1/chat/completions", "http://llm.example.test/v1/chat/completions", "http://localhost.example.test/v1"} {
		_, err := loadString(t, localDoc(ep, ""))
		ce := wantCode(t, err, CodeInvalidValue, "/options/model/endpoint")
		if !strings.Contains(ce.Error(), "https") || !strings.Contains(ce.Error(), "loopback") {
			t.Fatalf("%s: the refusal does not say what is allowed: %v", ep, ce)
		}
	}
}

// TestLockedLocalModelNeedsProviderEndpoints: under lock a loopback
// endpoint loads only where an [[authority]] layer's provider_endpoints
// lists it exactly; the refusal names the key to add it to.
func TestLockedLocalModelNeedsProviderEndpoints(t *testing.T) {
	ep := "http://127.0.0.1:11434/v1/chat/completions"
	locked := "[deployment]\nlocked = true\n"
	_, err := loadString(t, localDoc(ep, locked))
	ce := wantCode(t, err, CodeInvalidValue, "/options/model/endpoint")
	if !strings.Contains(ce.Error(), "provider_endpoints") || !strings.Contains(ce.Error(), ep) {
		t.Fatalf("the refusal does not say what would allow it: %v", ce)
	}
	// Another layer listing another endpoint does not count.
	_, err = loadString(t, localDoc(ep, locked+"[[authority]]\nid = \"other\"\nprovider_endpoints = [\"http://127.0.0.1:9999/v1/chat/completions\"]\n"))
	if err == nil {
		t.Fatal("a layer listing another endpoint admitted this one")
	}
	if _, err := loadString(t, localDoc(ep, locked+"[[authority]]\nid = \"local-model\"\nprovider_endpoints = [\""+ep+"\"]\n")); err != nil {
		t.Fatal(err)
	}
}

// TestModelRetryOptions: options.model.retry loads with its defaults
// filled in where unset, 0 attempts turns retries off, and an initial
// backoff above the cap is refused with the key's path.
func TestModelRetryOptions(t *testing.T) {
	d, err := loadString(t, "schema_version = 1\n")
	if err != nil {
		t.Fatal(err)
	}
	if a, i, m := d.Options.RetryPolicy(); a != 3 || i != 500 || m != 30_000 {
		t.Fatalf("defaults %d %d %d", a, i, m)
	}
	d, err = loadString(t, "schema_version = 1\n[options.model.retry]\nmax_attempts = 0\nmax_backoff_ms = 2000\n")
	if err != nil {
		t.Fatal(err)
	}
	if a, i, m := d.Options.RetryPolicy(); a != 0 || i != 500 || m != 2000 {
		t.Fatalf("got %d %d %d", a, i, m)
	}
	_, err = loadString(t, "schema_version = 1\n[options.model.retry]\ninitial_backoff_ms = 5000\nmax_backoff_ms = 2000\n")
	wantCode(t, err, CodeInvalidValue, "/options/model/retry/initial_backoff_ms")
	_, err = loadString(t, "schema_version = 1\n[options.model.retry]\nmax_attempts = 11\n")
	wantCode(t, err, CodeInvalidValue, "/options/model/retry/max_attempts")
}
