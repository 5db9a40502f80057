package config

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The options audit: no key the deployment schema accepts loads silently
// and does nothing. Every key (a walk of the spec tree: options.*, the
// [[authority]] layers, credentials, deployment) is covered by exactly one
// of the lists below, by its own path or by its nearest listed ancestor
// (a rule set, a limits table, ...). A key added to the schema without an
// entry fails TestEveryOptionHasItsEffect.

// optionEffects names, per key, tests that show the key's effect.
var optionEffects = map[string][]string{
	"options.run.workspace": {"TestRunWorkspaceIsWhatTheToolsServe"},

	"options.memory.repository":       {"TestMemoryPinIsInTheSnapshotDigestAndRunStarted"},
	"options.memory.ref":              {"TestMemoryPinIsInTheSnapshotDigestAndRunStarted", "TestMemoryRuntimeIsNotReadyWithoutItsRefOrOntology"},
	"options.memory.graph_paths":      {"TestMemoryGrantHidesRecordsOfOtherKinds"},
	"options.memory.docs_paths":       {"TestMemoryGrantHidesRecordsOfOtherKinds"},
	"options.memory.ontology":         {"TestMemoryRuntimeIsNotReadyWithoutItsRefOrOntology"},
	"options.memory.grants.*.kinds":   {"TestMemoryGrantHidesRecordsOfOtherKinds"},
	"options.memory.grants.*.paths":   {"TestMemoryGrantHidesRecordsOfOtherKinds"},
	"options.memory.grants.*.refresh": {"TestMemoryRefreshGrantReadsBeyondThePinWithoutApproval"},
	"options.run.instructions":        {"TestRouterCategorySelectsItsEntry", "TestResponsesRequestShape"},

	"options.model.provider":                 {"TestOpenAICompatibleAndScriptProviders", "TestChatRequestShapePerProvider"},
	"options.model.id":                       {"TestOpenAICompatibleAndScriptProviders", "TestChatRequestShapePerProvider"},
	"options.model.endpoint":                 {"TestProviderTaskThroughRuntime", "TestLoopbackHTTPOnlyAsUnlockedFixture"},
	"options.model.credential":               {"TestProviderTaskThroughRuntime", "TestCredentialResolvesOnlyForConsumerAndDestination"},
	"options.model.capability_profile":       {"TestCapabilityProfileIsRequiredForOpenResponsesOnly", "TestResponsesRequestShape"},
	"options.model.auth_header":              {"TestAuthHeaderSchemeAndOutputAllowanceReachTheWire", "TestResponsesRequestShape"},
	"options.model.auth_scheme":              {"TestAuthHeaderSchemeAndOutputAllowanceReachTheWire", "TestResponsesRequestShape"},
	"options.model.context_window_tokens":    {"TestTokenTriggerBoundary"},
	"options.model.script":                   {"TestOpenAICompatibleAndScriptProviders", "TestScriptModelTakesTheTurnFromTheLoop"},
	"options.model.pricing.input":            {"TestPricingComputesCostFromUsage", "TestNativeProviderPricingReachesTheCost"},
	"options.model.pricing.output":           {"TestPricingComputesCostFromUsage", "TestNativeProviderPricingReachesTheCost"},
	"options.model.pricing.cache_read":       {"TestPricingComputesCostFromUsage", "TestNativeProviderPricingReachesTheCost"},
	"options.model.pricing.cache_write":      {"TestPricingComputesCostFromUsage", "TestNativeProviderPricingReachesTheCost"},
	"options.models.*.pricing.input":         {"TestPricingComputesCostFromUsage", "TestNativeProviderPricingReachesTheCost"},
	"options.models.*.pricing.output":        {"TestPricingComputesCostFromUsage", "TestNativeProviderPricingReachesTheCost"},
	"options.models.*.pricing.cache_read":    {"TestPricingComputesCostFromUsage", "TestNativeProviderPricingReachesTheCost"},
	"options.models.*.pricing.cache_write":   {"TestPricingComputesCostFromUsage", "TestNativeProviderPricingReachesTheCost"},
	"options.model.prompt_caching":           {"TestPromptCachingAutoKeepsTwentyTurnsPrefixStable", "TestNativeProviderPromptCachingReachesTheWire"},
	"options.models.*.prompt_caching":        {"TestPromptCachingAutoKeepsTwentyTurnsPrefixStable"},
	"options.model.stream_idle_timeout_ms":   {"TestStreamIdleTimeoutIsAModelKey", "TestStalledStreamEndsAsAttemptTimedOut"},
	"options.tools.max_recoverable_errors":   {"TestMisselectionGoesBackToTheModel", "TestMisselectionWithoutRecoveryEndsAsToday", "TestRecoverableErrorsAreBoundedAndConsecutive"},
	"options.tools.on_denial":                {"TestDenialEndsTheTaskUnlessReported"},
	"options.mcp.servers.*.roles":            {"TestRequiredRolesReachTheAuthority"},
	"options.required_roles.*":               {"TestRequiredRolesReachTheAuthority"},
	"options.audit.level":                    {"TestAuditLevelsReachTheTraceGraphAndSnapshot"},
	"options.audit.capabilities.*":           {"TestAuditLevelsReachTheTraceGraphAndSnapshot"},
	"options.resume.unknown":                 {"TestResumeUnknownPolicyFailEndsTheTask", "TestResumeUnknownPolicyAskAsksTheApprover"},
	"options.model.retry.max_attempts":       {"TestModelRetryOptions", "TestRetryOffAndNotSent", "TestRouteRetriesRecordEachAttempt"},
	"options.model.retry.initial_backoff_ms": {"TestModelRetryOptions", "TestRetryBackoffDoublesUpToTheCap", "TestRouteRetriesRecordEachAttempt"},
	"options.model.retry.max_backoff_ms":     {"TestModelRetryOptions", "TestRetryAfterPastTheCapFallsBackAtOnce", "TestRouteRetriesRecordEachAttempt"},
	"options.model.reasoning":                {"TestChatRequestShapePerProvider", "TestReasoningCapabilitiesHoldTheRequest"},
	"options.model.reasoning_capabilities":   {"TestReasoningCapabilitiesHoldTheRequest"},

	"options.models.*.provider":                        {"TestFixtureRouteFallsBackAfter503"},
	"options.models.*.id":                              {"TestFixtureRouteFallsBackAfter503", "TestRouterCategorySelectsItsEntry"},
	"options.models.*.endpoint":                        {"TestRouterCategorySelectsItsEntry"},
	"options.models.*.credential":                      {"TestRouterCategorySelectsItsEntry", "TestCredentialResolvesOnlyForConsumerAndDestination"},
	"options.models.*.capability_profile":              {"TestCapabilityProfileIsRequiredForOpenResponsesOnly"},
	"options.models.*.auth_header":                     {"TestAuthHeaderSchemeAndOutputAllowanceReachTheWire"},
	"options.models.*.auth_scheme":                     {"TestAuthHeaderSchemeAndOutputAllowanceReachTheWire"},
	"options.models.*.script":                          {"TestOpenAICompatibleAndScriptProviders"},
	"options.models.*.stream_idle_timeout_ms":          {"TestStreamIdleTimeoutIsAModelKey"},
	"options.models.*.model_options.max_output_tokens": {"TestAuthHeaderSchemeAndOutputAllowanceReachTheWire"},
	"options.models.*.model_options.reasoning":         {"TestReasoningCapabilitiesHoldTheRequest"},
	"options.models.*.capabilities.text_streaming":     {"TestRouteNeverSelectsAnEntryLackingARequiredCapability", "TestRouteWithNoSatisfiableEntryIsRefused"},
	"options.models.*.capabilities.tool_calls":         {"TestRouteNeverSelectsAnEntryLackingARequiredCapability", "TestRouteWithNoSatisfiableEntryIsRefused"},
	"options.models.*.capabilities.reasoning":          {"TestReasoningCapabilitiesHoldTheRequest"},

	"options.routes.*.entries":                  {"TestFixtureRouteFallsBackAfter503", "TestFallbackAfter503UsesTheSecondEntry"},
	"options.routes.*.max_attempts":             {"TestMaxAttemptsStopsTheRoute"},
	"options.routes.*.per_attempt_timeout_ms":   {"TestAttemptDeadlineIsModelAttemptTimedOut"},
	"options.routes.*.eligible_errors":          {"TestFallbackEligibility"},
	"options.routes.*.retry_uncertain_delivery": {"TestFallbackEligibility"},
	"options.routes.*.retry_owner":              {"TestFallbackAfter503UsesTheSecondEntry"},
	"options.routes.*.sticky":                   {"TestFallbackAfter503UsesTheSecondEntry"},
	"options.routes.*.required_capabilities":    {"TestRouteNeverSelectsAnEntryLackingARequiredCapability", "TestRouteWithNoSatisfiableEntryIsRefused"},
	"options.routes.*.router":                   {"TestRouterCategorySelectsItsEntry", "TestRouterFailureEndsTheTask", "TestRouterSlowAnswer", "TestRouterOversizedBodyIsNotSent", "TestRouterCredentialIsTheVercelCredential", "TestRouterCategoryMustBeARouteEntry", "TestNestedRouterIsRefused", "TestRouterEndpointIsAProviderEndpoint"},
	"options.model_route":                       {"TestFixtureRouteFallsBackAfter503"},

	"options.context.max_summary_tokens":     {"TestContextKeysReachTheCompactionEngine", "TestClampsAtTheirMinimum", "TestSummaryBoundsAndBudgets"},
	"options.context.max_summary_bytes":      {"TestContextKeysReachTheCompactionEngine", "TestClampsAtTheirMinimum", "TestCheckRefusesWhatIsNotAStrictlySmallerSummary"},
	"options.models.*.context_window_tokens": {"TestContextKeysReachTheCompactionEngine", "TestTokenTriggerBoundary"},
	"options.context.enabled":                {"TestContextKeysReachTheCompactionEngine", "TestOverflowThatCannotBeRecovered"},
	"options.context.safety_margin_percent":  {"TestContextKeysReachTheCompactionEngine", "TestByteTriggerBoundary", "TestTokenTriggerBoundary"},
	"options.context.keep_recent_turns":      {"TestContextKeysReachTheCompactionEngine", "TestLongTaskCompactsRepeatedlyUnderTheContextCeiling", "TestSummaryBoundsAndBudgets"},

	"options.limits":                           {"TestLimitKeysReachTheirCeilings", "TestCeilingsAtTheLimitAndOnePast"},
	"options.limits.max_output_tokens":         {"TestSummaryBoundsAndBudgets", "TestReasoningCapabilitiesHoldTheRequest"},
	"options.limits.max_tool_duration_ms":      {"TestMaxToolDurationIsTheShellsBound", "TestTimeoutKillsTheCommand"},
	"options.limits.filesystem.max_file_bytes": {"TestReadMaxFileBytesBoundary"},
	"options.limits.filesystem.max_entries":    {"TestListMaxEntriesBoundary"},
	"options.limits.filesystem.max_depth":      {"TestSearchLimitsBoundaries"},
	"options.limits.filesystem.max_scan_bytes": {"TestSearchLimitsBoundaries"},

	"options.shell.enabled":      {"TestFilesystemAndShellEnabledDecideTheTools"},
	"options.shell.commands":     {"TestShellRunUnderProductionLikePolicy", "TestPrefixMatchesWholeArgumentsOnly", "TestCommandRuleExamplesAreChecked"},
	"options.shell.environment":  {"TestEnvironmentAdmission"},
	"options.shell.cwd_roots":    {"TestCwdStaysInsideTheWorkspace"},
	"options.shell.sandbox":      {"TestShellSandboxDefaultsToDeny", "TestSandboxReachesNoNetwork", "TestSandboxReadOnlyBlocksWritesInTheWorkspace"},
	"options.filesystem.enabled": {"TestFilesystemAndShellEnabledDecideTheTools"},
	"options.filesystem.write":   {"TestWorkspaceWriteNeedsFSWrite"},
	"options.filesystem.scope":   {"TestFilesystemRepoWriteScopeReachesTheTools", "TestRepoWriteWritesOnlyInTheWorkTree", "TestFilesystemRepoWriteScopeNeedsWrite"},
	"options.policy":             {"TestRuleEvaluation", "TestDenyWinsOverMatchingAllow", "TestPolicyCheckGivesTheRuntimesAnswer"},

	"options.output.schema":                    {"TestOutputValidationJudgesTheAnswerAsWritten", "TestOutputSpecIsTheDeploymentsOutputOptions"},
	"options.output.max_validation_work":       {"TestOutputSpecIsTheDeploymentsOutputOptions", "TestWorkBoundsActualWork"},
	"options.output.repair.enabled":            {"TestOutputValidationWithOneRepair", "TestOutputWithoutRepairHasNoRepairRecord"},
	"options.output.repair.max_feedback_bytes": {"TestOutputSpecIsTheDeploymentsOutputOptions"},
	"options.skills.roots":                     {"TestPresetSkillsDiscoverPresetEvidence"},
	"options.skills.pins.*":                    {"TestSkillPinnedByDigest"},
	"options.skills.inline.*":                  {"TestInlineSkillIsActivatedFromTheDeployment"},
	"options.skills.files.*":                   {"TestSingleFileSkillIsActivatedFromTheDeployment"},
	"options.skills.packages.*":                {"TestArchivePackageIsActivatedFromTheDeployment", "TestGitPackageIsActivatedFromTheDeployment"},
	"options.skills.activate":                  {"TestActivationSelectionRules", "TestActivationReturnsRecordAndUserRoleTaskData"},

	"options.mcp.servers.*.transport":           {"TestEverythingStdio", "TestEverythingStreamableHTTP"},
	"options.mcp.servers.*.command":             {"TestRelativeStdioCommandNamesServer", "TestEverythingStdio"},
	"options.mcp.servers.*.args":                {"TestEverythingStdio"},
	"options.mcp.servers.*.cwd":                 {"TestMCPServersSelectAnExactSubset"},
	"options.mcp.servers.*.env":                 {"TestEnvironmentIsClearedButForCredentials"},
	"options.mcp.servers.*.url":                 {"TestEverythingStreamableHTTP"},
	"options.mcp.servers.*.headers":             {"TestHeaderCredentialsGoOnlyToTheirServerAndOnDelete"},
	"options.mcp.servers.*.oauth.grant":         {"TestDeploymentOAuthServerGetsItsTokenThroughTheHostStore", "TestConformanceClientScenarios"},
	"options.mcp.servers.*.oauth.client_id":     {"TestDeploymentOAuthServerGetsItsTokenThroughTheHostStore", "TestConformanceClientScenarios"},
	"options.mcp.servers.*.oauth.client_secret": {"TestDeploymentOAuthServerGetsItsTokenThroughTheHostStore", "TestConformanceClientScenarios"},
	"options.mcp.servers.*.oauth.scopes":        {"TestDeploymentOAuthServerGetsItsTokenThroughTheHostStore"},
	// The deployment maps private_key and client_metadata_url as it maps
	// client_secret; their effect is the conformance suite's
	// auth/client-credentials-jwt and auth/basic-cimd.
	"options.mcp.servers.*.oauth.private_key":         {"TestConformanceClientScenarios"},
	"options.mcp.servers.*.oauth.client_metadata_url": {"TestConformanceClientScenarios"},
	"options.mcp.servers.*.oauth.id_token":            {"TestConformanceClientScenarios"},
	"options.mcp.servers.*.oauth.identity_provider":   {"TestConformanceClientScenarios"},
	"options.mcp.servers.*.oauth.identity_client_id":  {"TestConformanceClientScenarios"},
	"options.mcp.servers.*.required":                  {"TestRequiredMCPServerFailureFailsBeforeAnyModelCall", "TestOptionalServerThatFailsIsLeftOutWithAReason"},
	"options.mcp.servers.*.startup_timeout_ms":        {"TestHangingServerFailsAtStartupTimeout"},
	"options.mcp.servers.*.operation_timeout_ms":      {"TestOperationTimeoutEndsTheCallAsTimedOut"},
	"options.mcp.servers.*.pins":                      {"TestPinnedDefinitionChangeFailsClosed"},
	"options.mcp.servers.*.sandbox":                   {"TestStdioServersAreSandboxedByDefault", "TestSandboxedMCPServerDaemonDiesWithItsHost"},
	"options.mcp.policies":                            {"TestMCPAdmissionOrder", "TestAllowRuleCannotCreateServer", "TestLauncherRulesMatchTheCanonicalFile"},
	"options.children.enabled":                        {"TestChildrenRunOnTheRootLedger"},
	"options.a2a.remotes":                             {"TestA2ARemoteFromTheReferenceBaseThroughTheRuntime", "TestBearerGoesOnlyToTheEndpoint", "TestTraceContextOnlyWhenNegotiated"},
	"options.interfaces.acp.max_sessions":             {"TestACPMaxSessionsIsBoundedAndLeavesTheFingerprintAlone"},
	"options.interfaces.acp.client_mcp_servers":       {"TestClientMCPServersAreOffByDefault", "TestClientMCPServerRunsWithItsEnvMasked", "TestACPEditorFeaturesWithTheTypeScriptClient"},
	"options.interfaces.acp.client_mcp_sandbox":       {"TestClientMCPSandboxIsNarrowedByTheLayers"},
	"options.interfaces.acp.workspace_roots":          {"TestSessionsInManyProjectDirectories", "TestACPEditorFeaturesWithTheTypeScriptClient"},
	"options.trace.path":                              {"TestDeploymentTraceSink", "TestRunTraceTemplateIsForSessions"},
	"options.trace.max_bytes":                         {"TestDeploymentTraceSink", "TestTraceBoundBelowTheReserveIsRefused"},
	"options.trace.capture_content":                   {"TestTraceCapturesContentWhenAskedAndMasksSecrets", "TestTraceContentIsNullUnlessCaptured"},

	"options.approvals":          {"TestApprovalClassesOnlyAdd", "TestApprovalMatrix"},
	"options.redaction.patterns": {"TestDeploymentPatternsAreMasked", "TestRedactionPatternMustCompileAndBeBounded"},

	"options.otel.exporter":              {"TestRunExportsSpansFromTheDeployment", "TestOTelOffBuildsNoPipeline"},
	"options.otel.sdk_disabled":          {"TestOTelOffBuildsNoPipeline"},
	"options.otel.endpoint":              {"TestRunExportsSpansFromTheDeployment", "TestOTLPRequiresHTTPSOutsideLoopback"},
	"options.otel.headers":               {"TestRunExportsSpansFromTheDeployment"},
	"options.otel.compression":           {"TestRunExportsSpansFromTheDeployment"},
	"options.otel.service_name":          {"TestRunExportsSpansFromTheDeployment"},
	"options.otel.resource_attributes":   {"TestRunExportsSpansFromTheDeployment"},
	"options.interfaces.cli_output":      {"TestCLIOutputFromTheDeployment"},
	"options.otel.sampler":               {"TestOTelSampler"},
	"options.otel.sampler_arg":           {"TestOTelSampler"},
	"options.otel.propagators":           {"TestRunJoinsTheCallersTrace"},
	"options.otel.protocol":              {"TestOTLPEncodingDecodesWithTheOfficialProtos"},
	"options.otel.max_export_batch_size": {"TestOTelBatchSettingsShapeTheExports"},
	"options.otel.schedule_delay_ms":     {"TestOTelBatchSettingsShapeTheExports"},

	"authority":                          {"TestEveryLayerMustAllow", "TestLayersNarrowNeverWiden", "TestAuthorityCeilingViolation"},
	"authority.shell.sandbox":            {"TestAuthorityLayersNarrowTheSandbox"},
	"authority.mcp":                      {"TestMCPAdmissionOrder", "TestAuthorityLayersNarrowTheSandbox"},
	"authority.limits":                   {"TestAuthorityCeilingViolation", "TestLimitEntriesReadTheirOwnField"},
	"authority.model_ids":                {"TestAuthorityLayerFieldsAreCeilings"},
	"authority.credential_ids":           {"TestAuthorityLayerFieldsAreCeilings"},
	"authority.otel_endpoints":           {"TestAuthorityLayerFieldsAreCeilings"},
	"authority.capture_content":          {"TestAuthorityLayerFieldsAreCeilings"},
	"authority.workspace_roots":          {"TestAuthorityLayerFieldsAreCeilings"},
	"authority.skill_roots":              {"TestAuthorityLayerFieldsAreCeilings"},
	"authority.provider_endpoints":       {"TestAuthorityLayerFieldsAreCeilings", "TestRouterEndpointIsAProviderEndpoint"},
	"authority.shell.environment":        {"TestEnvironmentAdmission"},
	"authority.a2a_remotes":              {"TestAuthorityLayerFieldsAreCeilings", "TestCardAdmission"},
	"credentials":                        {"TestCredentialResolvesOnlyForConsumerAndDestination", "TestOnlyAnAbsentSourceFallsThrough", "TestDotenv"},
	"deployment.locked":                  {"TestProductionPresetIsLockedWithReadOnlyLayer", "TestLockedOverridesOnlyNarrow"},
	"deployment.allowed_run_overrides":   {"TestLockedOverridesOnlyNarrow"},
	"deployment.narrowing_run_overrides": {"TestNarrowingRunOverridesListedAdmitsOnlyTheList", "TestLockedDeploymentAcceptsUnlistedNarrowing"},
	"deployment.name":                    {"TestInspectStacksTakeTheDeploymentName"},
}

// optionsRefused are keys refused at load with config_unsupported_feature
// naming them; reserved says the reference reserves and refuses them too
// (no difference to write down), otherwise docs/differences.md names them.
var optionsRefused = map[string]struct{ reserved bool }{
	"options.interfaces.tui": {reserved: true},
	"options.diagnostics":    {reserved: true},
	"options.compatibility":  {reserved: true},
}

// optionsPendingOwner are keys another part of issue 21 gives their effect
// to; each names its owner and the tests it will add. Until they land the
// key is listed here; then it moves to optionEffects.
var optionsPendingOwner = map[string]string{}

// optionsKnownGaps have their effect in code but no test naming the key;
// the list may only shrink.
var optionsKnownGaps = map[string]string{
	"options.otel.timeout_ms":        "the exporter's request timeout",
	"options.otel.max_queue_size":    "the batch span processor",
	"options.otel.export_timeout_ms": "the batch span processor",
}

// auditKeys walks s and returns every key below prefix: leaves, with rule
// sets (tables of default/allow/deny) kept whole.
func auditKeys(prefix string, s *spec, out *[]string) {
	switch {
	case s.kind == sTable && len(s.fields) > 0:
		if _, ok := s.fields["default"]; ok && s.fields["allow"] != nil && s.fields["deny"] != nil {
			*out = append(*out, prefix)
			return
		}
		for _, k := range s.order {
			auditKeys(prefix+"."+k, s.fields[k], out)
		}
	case s.kind == sMap:
		auditKeys(prefix+".*", s.elem, out)
	case s.kind == sList && s.elem != nil && s.elem.kind == sTable:
		auditKeys(prefix, s.elem, out)
	default:
		*out = append(*out, prefix)
	}
}

func allAuditKeys() []string {
	var keys []string
	auditKeys("options", optionsSpec(), &keys)
	auditKeys("authority", authoritySpec(), &keys)
	auditKeys("credentials.*", credentialSpec(), &keys)
	auditKeys("deployment", deploymentSpec(), &keys)
	return keys
}

// covers reports whether pattern is key or one of its ancestors.
func covers(pattern, key string) bool {
	return key == pattern || strings.HasPrefix(key, pattern+".")
}

// testFuncs returns the names of every Test function in the module.
func testFuncs(t *testing.T) map[string]bool {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	names := map[string]bool{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, "_test.go") {
			b, _ := os.ReadFile(p)
			for _, m := range re.FindAllSubmatch(b, -1) {
				names[string(m[1])] = true
			}
		}
		return nil
	})
	return names
}

// TestEveryOptionHasItsEffect: every key is covered by exactly one list
// through its nearest listed ancestor, every listed pattern names a real
// key, every named test exists, and every refused key is refused at load
// with config_unsupported_feature naming it.
func TestEveryOptionHasItsEffect(t *testing.T) {
	keys := allAuditKeys()
	var patterns []string
	for _, m := range []map[string]bool{setOf(optionEffects), setOf(optionsRefused), setOf(optionsPendingOwner), setOf(optionsKnownGaps)} {
		for p := range m {
			patterns = append(patterns, p)
		}
	}
	sort.Strings(patterns)
	for i := 1; i < len(patterns); i++ {
		if patterns[i] == patterns[i-1] {
			t.Errorf("%s is listed twice", patterns[i])
		}
	}
	used := map[string]bool{}
	for _, k := range keys {
		best := ""
		for _, p := range patterns {
			if covers(p, k) && len(p) > len(best) {
				best = p
			}
		}
		if best == "" {
			t.Errorf("%s loads with no test of its effect and is not refused: add it to optionEffects (naming the test) or refuse it with config_unsupported_feature (optionsRefused and docs/differences.md)", k)
			continue
		}
		used[best] = true
	}
	for _, p := range patterns {
		if !used[p] {
			t.Errorf("%s is listed but no schema key is at or below it", p)
		}
	}
	tests := testFuncs(t)
	for k, names := range optionEffects {
		if len(names) == 0 {
			t.Errorf("%s names no test", k)
		}
		for _, n := range names {
			if !tests[n] {
				t.Errorf("%s names %s, which is no test of the module", k, n)
			}
		}
	}
	diffs, err := os.ReadFile("../../docs/differences.md")
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range optionsRefused {
		if !r.reserved && !bytes.Contains(diffs, []byte(k[strings.LastIndex(k, ".")+1:])) {
			t.Errorf("%s is refused but docs/differences.md does not say so", k)
		}
		if strings.Contains(k, "*") {
			continue // refused by value (a const), checked by its own test
		}
		dot := strings.LastIndex(k, ".")
		doc := "schema_version = 1\n[" + k[:dot] + "]\n" + k[dot+1:] + " = 1\n"
		_, err := loadString(t, doc)
		wantCode(t, err, CodeUnsupportedFeature, "/"+strings.ReplaceAll(k, ".", "/"))
	}
	if testing.Verbose() {
		for k, why := range optionsPendingOwner {
			t.Logf("pending: %s (%s)", k, why)
		}
		for k, why := range optionsKnownGaps {
			t.Logf("known gap: %s (%s)", k, why)
		}
	}
}

func setOf[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}
