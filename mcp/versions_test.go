package mcp

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// The versions the handshake accepts are not a variable a caller can edit:
// SupportedVersions returns a fresh copy each time, so overwriting or
// extending the result neither changes the next call nor admits a server
// that answers an unsupported version.
func TestSupportedVersionsResultIsACopyTheHandshakeIgnores(t *testing.T) {
	t.Parallel()
	want := SupportedVersions()
	if want[0] != ProtocolVersion {
		t.Fatalf("newest supported version %q, want ProtocolVersion %q", want[0], ProtocolVersion)
	}
	got := SupportedVersions()
	for i := range got {
		got[i] = "2024-11-05"
	}
	_ = append(got[:1], "2024-11-05")
	if again := SupportedVersions(); !slices.Equal(again, want) {
		t.Fatalf("after editing a result, SupportedVersions() = %v, want %v", again, want)
	}

	srv := faultStdio(t, "old", "version")
	_, err := Open(context.Background(), Options{Servers: []Server{srv}, Authority: allowAll(t, srv)})
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Got != "2024-11-05" {
		t.Fatalf("a server answering 2024-11-05 after the caller edited the list: want a VersionError, got %v", err)
	}
	good := faultStdio(t, "good", "ok")
	c := open(t, Options{Servers: []Server{good}, Authority: allowAll(t, good)})
	if hs := c.Health(); hs[0].State == Failed || hs[0].Version != ProtocolVersion {
		t.Fatalf("a supported server after the caller edited the list: health %+v", hs[0])
	}
}
