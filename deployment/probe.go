package deployment

import "time"

// ProviderProbeOptions configures Deployment.ProbeProvider.
type ProviderProbeOptions struct {
	// LookupEnv reads the environment credentials resolve from (nil:
	// os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// Fixture, when set, probes the configured provider against a host
	// fixture as Deployment.FixtureModel builds it.
	Fixture string
	// MaxOutputTokens is the request's allowance (zero: 16).
	MaxOutputTokens int64
	// Timeout bounds the probe (zero: 10 s). A probe that ctx ends
	// before it is reported interrupted; one the timeout ends, a
	// transport failure.
	Timeout time.Duration
}

// ProviderProbe is what Deployment.ProbeProvider found.
type ProviderProbe struct {
	// Target names what was probed ("openrouter/some-model at URL"), or is
	// empty when nothing was sent.
	Target string
	// Code is empty when the probe passed, else why it did not:
	// invalid_configuration, credential_unavailable,
	// provider_auth_rejected (HTTP 401 or 403),
	// provider_request_unsupported (HTTP 400, 404 or 422, or the context
	// too large), provider_rejected, provider_transport, provider_response,
	// or interrupted (ctx ended).
	Code string
	// Detail says what happened, in words safe to show: it never holds a
	// credential or a response body.
	Detail string
}

// SandboxCheck is what Deployment.CheckSandbox found: the sandbox every
// call that runs in a process would get, and whether bubblewrap can make
// it here.
type SandboxCheck struct {
	// Processes names each thing that runs in a process with its sandbox,
	// in a stable order: "shell.run bwrap(...)", "mcp/NAME off".
	Processes []string
	// Required is true when any of them is confined.
	Required bool
	// Bubblewrap is the bubblewrap executable that was checked and works
	// here; empty when none is required or it does not work.
	Bubblewrap string
	// Err, when a sandbox is required, says why bubblewrap cannot make it
	// here; nil otherwise.
	Err error
}

// SandboxCanary is one escape Deployment.ProbeSandbox tried.
type SandboxCanary struct {
	// Name is a stable code: "write_outside_workspace",
	// "read_host_environment", "read_root_only_file", "connect_loopback",
	// "outlive_the_call", "type_into_terminal", "terminal_ioctl".
	Name string `json:"name"`
	// Blocked is true when the escape failed.
	Blocked bool `json:"blocked"`
	// Skipped is true when the escape could not be tried here (Detail
	// says why); Blocked is then false and means nothing.
	Skipped bool `json:"skipped,omitempty"`
	// Detail says what was tried, never what was read.
	Detail string `json:"detail"`
}

// EgressProbe is what Deployment.ProbeEgress found: the egress canary of
// network allowlist, against loopback fixtures of the probing process.
type EgressProbe struct {
	// Reached is true when the allowed fixture answered through the
	// proxy; Detail says what was asked and what came back.
	Reached bool   `json:"reached"`
	Detail  string `json:"detail"`
	// Canaries are the escapes tried ("egress_other_port",
	// "egress_ip_literal", "egress_direct"), each blocked or not.
	Canaries []SandboxCanary `json:"canaries"`
}

// SandboxProbe is what Deployment.ProbeSandbox found.
type SandboxProbe struct {
	// Profile is the sandbox the canaries ran under, as a string.
	Profile string
	// Canaries are the escapes tried, in a stable order.
	Canaries []SandboxCanary
}
