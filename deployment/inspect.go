package deployment

import "github.com/pabloagent/pablo/authority"

// Credential is one declared credential: the consumer it may be resolved
// for and where its value is read from, in order; never the value.
type Credential struct {
	Consumer authority.Consumer `json:"consumer"`
	Sources  []CredentialSource `json:"sources"`
}

// CredentialSource is one place a credential's value is read from.
type CredentialSource struct {
	// Kind is the source's kind, as the deployment writes it
	// ("environment", "file", ...).
	Kind string `json:"kind"`
	// Name is an environment variable's name.
	Name string `json:"name,omitempty"`
	// Path is a file's path object as diagnostics write it:
	// "binding:NAME:PATH" or "BASE:PATH".
	Path string `json:"path,omitempty"`
	// Encoding and Key say how the value is read out of the source.
	Encoding string `json:"encoding,omitempty"`
	Key      string `json:"key,omitempty"`
}

// ShellCommand is what the literal command policy of a deployment makes of
// one command line, without running it: Deployment.ParseShellCommand.
type ShellCommand struct {
	// Argv is the parsed command, when it parsed.
	Argv []string `json:"argv,omitempty"`
	// Executable is the program that would run (the absolute path given,
	// or the /usr/bin or /bin entry a bare name was found at), and
	// Canonical that path with every symlink resolved; both empty when it
	// did not resolve.
	Executable string `json:"executable,omitempty"`
	Canonical  string `json:"canonical,omitempty"`
}

// ModelProfile is one model profile a run of a deployment may use: the
// selected model, or one entry of the selected route.
type ModelProfile struct {
	// Option is the profile's JSON pointer: "/options/model" or
	// "/options/models/NAME".
	Option string
	// Provider and Model are the configured provider and model ID.
	Provider string
	Model    string
	// Credential names the credential the provider is called with.
	Credential string
	// Consumer and Endpoint are what the credential resolves for; Consumer
	// is empty for a provider that makes no request (the script model).
	Consumer authority.Consumer
	Endpoint string
	// Keyless is an openai_compatible server whose credential is not
	// declared: it is called without a key, and nothing is resolved.
	Keyless bool
	// Name is the profile's entry of options.models, empty for
	// options.model.
	Name string
}
