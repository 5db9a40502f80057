// Package deployment is the vocabulary of a loaded deployment that a host
// reads: its diagnostics ([Error], its [Code]s, [PathError]), the
// read-only view of its options ([Options]), what inspecting it answers
// ([Credential], [ModelProfile], [ShellCommand]) and what its live checks
// report ([SandboxCheck], [SandboxProbe], [ProviderProbe]). The methods of
// pablo.Deployment return these values; every one is the caller's copy.
//
// A host loads a deployment with pablo.Load and gets a *pablo.Deployment;
// when loading or building a runtime fails, the error is an *[Error] (or,
// for a path object that does not resolve, a *[PathError]), matched with
// errors.As wherever it was raised: the deployment language, the root or
// the run engine all raise this one type. errors.Is(err, [ErrInvalid])
// holds for both.
//
//	d, err := pablo.Load(pablo.LoadOptions{Config: "pablo.toml"})
//	var de *deployment.Error
//	if errors.As(err, &de) {
//		fmt.Println(de.Code, de.Option, de.Source, de.Line)
//	}
//
// [Options] is what Deployment.Options returns: the resolved option groups
// a host reads to wire what it serves (the trace file, the OTLP exporter,
// the ACP server's bounds, the MCP servers a session may select), each the
// caller's own copy.
//
// The inspection methods of pablo.Deployment, all offline unless they say
// so: Options, Credentials, ModelProfiles, NativeTools,
// AllowedRunOverrides, ParseShellCommand, CheckPaths, CanonicalJSON,
// Explain and Render; Decide, Graph and Why (package graph); the live
// checks CheckSandbox, ProbeSandbox and ProbeProvider.
package deployment
