package config

import (
	"testing"
	"time"
)

// open_responses needs capability_profile, the only profile there is; any
// other provider refuses it.
func TestCapabilityProfileIsRequiredForOpenResponsesOnly(t *testing.T) {
	base := "schema_version = 1\n[credentials.r]\nconsumer = \"provider.open_responses\"\nsources = [{ kind = \"environment\", name = \"R\" }]\n" +
		"[options.model]\nprovider = \"open_responses\"\nid = \"m\"\ncredential = \"r\"\nendpoint = \"https://responses.example/v1/responses\"\n"
	_, err := loadString(t, base)
	wantCode(t, err, CodeInvalidValue, "/options/model/capability_profile")
	if _, err := loadString(t, base+"capability_profile = \"open-responses-text-tools-v1\"\n"); err != nil {
		t.Fatal(err)
	}
	_, err = loadString(t, "schema_version = 1\n[options.model]\ncapability_profile = \"open-responses-text-tools-v1\"\n")
	wantCode(t, err, CodeInvalidValue, "/options/model")
}

// limits.max_tool_duration_ms is shell.run's host tool duration (its
// timeout, which TestTimeoutKillsTheCommand shows kills the command).
func TestMaxToolDurationIsTheShellsBound(t *testing.T) {
	d, err := loadString(t, "schema_version = 1\n[options.limits]\nmax_tool_duration_ms = 1234\n")
	if err != nil {
		t.Fatal(err)
	}
	o, err := d.ShellOptions(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxToolDuration != 1234*time.Millisecond {
		t.Fatalf("MaxToolDuration %v", o.MaxToolDuration)
	}
}
