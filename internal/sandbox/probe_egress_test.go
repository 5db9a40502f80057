package sandbox

import (
	"context"
	"os"
	"testing"
)

// TestProbeEgressReachesTheAllowedFixtureOnly: the egress canary of
// `doctor --probe sandbox`, in the real sandbox, reaches its allowed
// loopback fixture through the proxy, and its three escapes (another
// port, the IP literal, a connection past the proxy) are each blocked.
func TestProbeEgressReachesTheAllowedFixtureOnly(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := ProbeEgress(context.Background(), l, exe)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", p.Detail)
	for _, c := range p.Canaries {
		t.Logf("%s: %s", c.Name, c.Detail)
	}
	if !p.Reached {
		t.Errorf("the allowed fixture was not reached: %s", p.Detail)
	}
	if len(p.Canaries) != 3 {
		t.Fatalf("%d canaries, want 3", len(p.Canaries))
	}
	for _, c := range p.Canaries {
		if !c.Blocked {
			t.Errorf("canary %s not blocked: %s", c.Name, c.Detail)
		}
	}
}
