package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// referenceCLI is REFERENCE §2's command line, each command and flag with
// the tests that hold its parsing, validation, override and lock
// behaviour (or, for a command, what it does). A flag is on the parser of
// the command named before the colon ("run" unless said).
var referenceCLI = map[string][]string{
	// Commands.
	"pablo (a capable terminal)":  {"TestTUINeedsACapableTerminal"},
	"pablo (redirected)":          {"TestNoArgumentsOffATerminalIsAUsageError"},
	`pablo "TASK"`:                {"TestTaskAsFirstWordIsShorthandForRun", "TestOneWordTaskNearACommandIsRefused"},
	"pablo run":                   {"TestRunFlagsBecomeTypedOverrides", "TestDemoCompletes", "TestRunPreAdmissionJSONEnvelope"},
	"pablo tui":                   {"TestTUIInARealTerminal", "TestTUINeedsACapableTerminal", "TestTUISessionCarriesEarlierPrompts"},
	"pablo acp --stdio":           {"TestACPRefusesWhatItCannotServe", "TestACPWithTheTypeScriptClient", "TestVersionDemoAndACPFlagRules"},
	"pablo demo":                  {"TestDemoCompletes", "TestDemoWritesATraceWithContentOnRequest", "TestVersionDemoAndACPFlagRules"},
	"pablo config validate":       {"TestValidateFingerprintIsStable", "TestConfigErrorsExitTwoWithEmptyStdout", "TestConfigValidateSaysWhichDefaultModelItChose"},
	"pablo config explain|render": {"TestCLIOutputsAreByteIdentical", "TestJSONIsHonouredOrRefused"},
	"pablo skills list|show":      {"TestSkillsListAndShow", "TestSkillsShowReportsExtensionsAsInert"},
	"pablo doctor":                {"TestDoctorOfflineExitCodes", "TestDoctorProbeProviderExitCodes", "TestDoctorProbeMCP", "TestDoctorListsEveryMissingCredential"},
	"pablo --version|--help":      {"TestVersionDemoAndACPFlagRules", "TestEveryCommandAnswersHelp"},

	// Run options.
	"--workspace":               {"TestNoConfigModeChoosesProviderModelAndWorkspace", "TestNoConfigModeRefusesWhatItCannotRun", "TestWorkspaceFlagWithConfigIsTheWorkspaceBinding"},
	"--provider":                {"TestNoConfigModeChoosesProviderModelAndWorkspace", "TestRunFlagsBecomeTypedOverrides", "TestRunFlagsRefuseBadValues", "TestLockedRunAcceptsNarrowingFlagsOnly", "TestModelOverrideConflictsWithASelectedRoute"},
	"--model":                   {"TestNoConfigModeChoosesProviderModelAndWorkspace", "TestRunFlagsBecomeTypedOverrides", "TestRunFlagsRefuseBadValues", "TestLockedRunAcceptsNarrowingFlagsOnly", "TestLockedFlagForcesLockMode"},
	"--env-file":                {"TestNoConfigModeReadsTheKeyFromEnvironmentThenDotEnv", "TestNoConfigModeRefusesWhatItCannotRun", "TestEnvFileWithConfigIsForbiddenAtCredentials"},
	"--no-shell":                {"TestRunFlagsBecomeTypedOverrides", "TestRunFlagsRefuseBadValues", "TestLockedRunAcceptsNarrowingFlagsOnly", "TestLockedPresetAcceptsNoShellAndALowerModelCallCeiling"},
	"--no-filesystem":           {"TestRunFlagsBecomeTypedOverrides", "TestRunFlagsRefuseBadValues", "TestLockedRunAcceptsNarrowingFlagsOnly"},
	"--allow-write":             {"TestRunFlagsBecomeTypedOverrides", "TestRunFlagsRefuseBadValues", "TestLockedRunAcceptsNarrowingFlagsOnly", "TestLockedFlagForcesLockMode"},
	"--policy":                  {"TestPolicyFlagReplacesThePolicyUnlockedOnly", "TestLockedFlagForcesLockMode"},
	"--timeout":                 {"TestRunFlagsBecomeTypedOverrides", "TestRunFlagsRefuseBadValues", "TestLockedRunAcceptsNarrowingFlagsOnly"},
	"--tool-timeout":            {"TestRunFlagsBecomeTypedOverrides", "TestRunFlagsRefuseBadValues", "TestLockedRunAcceptsNarrowingFlagsOnly"},
	"--max-model-calls":         {"TestRunFlagsBecomeTypedOverrides", "TestRunFlagsRefuseBadValues", "TestLockedRunAcceptsNarrowingFlagsOnly", "TestLockedPresetAcceptsNoShellAndALowerModelCallCeiling"},
	"--max-tool-calls":          {"TestRunFlagsBecomeTypedOverrides", "TestRunFlagsRefuseBadValues", "TestLockedRunAcceptsNarrowingFlagsOnly"},
	"--max-total-tokens":        {"TestRunFlagsBecomeTypedOverrides", "TestRunFlagsRefuseBadValues", "TestLockedRunAcceptsNarrowingFlagsOnly"},
	"--max-cost-microusd":       {"TestRunFlagsBecomeTypedOverrides", "TestRunFlagsRefuseBadValues", "TestLockedRunAcceptsNarrowingFlagsOnly", "TestNativeProviderCostCeilingHoldsOnLiveCalls"},
	"--json":                    {"TestJSONIsHonouredOrRefused", "TestRunPreAdmissionJSONEnvelope", "TestACPRefusesWhatItCannotServe", "TestVersionDemoAndACPFlagRules"},
	"--output-schema":           {"TestRunFlagsBecomeTypedOverrides", "TestRunFlagsRefuseBadValues", "TestLockedRunAcceptsNarrowingFlagsOnly"},
	"--reasoning-effort":        {"TestRunFlagsBecomeTypedOverrides", "TestRunFlagsRefuseBadValues", "TestLockedRunAcceptsNarrowingFlagsOnly"},
	"--reasoning-budget-tokens": {"TestRunFlagsBecomeTypedOverrides", "TestRunFlagsRefuseBadValues", "TestLockedRunAcceptsNarrowingFlagsOnly"},
	"--skill":                   {"TestSkillFlagReplacesSkillsActivate", "TestUnknownSkillFlagIsAnErrorWithDidYouMean"},
	"--prompt-caching":          {"TestRunFlagsBecomeTypedOverrides", "TestRunFlagsRefuseBadValues", "TestLockedRunAcceptsNarrowingFlagsOnly", "TestPromptCachingFlagFollowsTheVercelRule"},
	"--trace":                   {"TestRunTraceFlagWritesANewPrivateFile", "TestRunTraceTemplateIsForSessions", "TestDemoWritesATraceWithContentOnRequest"},
	"--capture-content":         {"TestRunFlagsBecomeTypedOverrides", "TestLockedRunAcceptsNarrowingFlagsOnly", "TestDemoWritesATraceWithContentOnRequest"},
	"--traceparent":             {"TestRunJoinsTheCallersTrace"},
	"--tracestate":              {"TestRunJoinsTheCallersTrace"},
	"--role":                    {"TestRunRoleFlagGivesTheTaskItsRoles"}, // a Go extension (issue 37)
	"--kind":                    {"TestRunKindFlagFiltersSkills"},        // a Go extension (issue 37)
	"acp: --stdio":              {"TestACPRefusesWhatItCannotServe"},
	"doctor: --probe":           {"TestDoctorProbeProviderExitCodes", "TestDoctorProbeMCP"},

	// Deployment bootstrap flags.
	"--config":           {"TestConfigErrorsExitTwoWithEmptyStdout", "TestNoConfigModeChoosesProviderModelAndWorkspace"},
	"--config-root":      {"TestProfileAndConfigRootFlags"},
	"--profile":          {"TestProfileAndConfigRootFlags"},
	"--bind":             {"TestCLIAddsBindFlagSpelling", "TestWorkspaceFlagWithConfigIsTheWorkspaceBinding", "TestNoConfigModeRefusesWhatItCannotRun"},
	"--locked":           {"TestLockedFlagForcesLockMode", "TestDoctorProbeFixtureIsRefusedUnderLock"},
	"--user-config":      {"TestDefaultUserConfigAppliesWithoutConfigOnly", "TestWorkspaceConfigFlagAppliesAboveUserAndIsRefusedUnderLock"},
	"--workspace-config": {"TestWorkspaceConfigFlagAppliesAboveUserAndIsRefusedUnderLock"},
	"--fixture-endpoint": {"TestLockedDeploymentModelIsNeverReplacedByAFlag", "TestReadmeQuickStartRunsAgainstFixtures", "TestDoctorProbeProviderExitCodes"},
}

// whyMessages are the messages issue 36 found leaving the user guessing,
// each with the tests that show its new text.
var whyMessages = map[string][]string{
	"a missing credential names its consumer, the variable or file, and how to set it": {"TestMissingCredentialSaysHowToSetIt", "TestNoConfigModeReadsTheKeyFromEnvironmentThenDotEnv", "TestTUINeedsACapableTerminal"},
	"doctor lists every missing credential":                                            {"TestDoctorListsEveryMissingCredential"},
	"config validate names the default model and its credential":                       {"TestConfigValidateSaysWhichDefaultModelItChose"},
	"--approve, why and policy check refuse an unknown capability with did you mean":   {"TestUnknownCapabilityIsAUsageErrorWithDidYouMean"},
	"--skill names the nearest Skill":                                                  {"TestUnknownSkillFlagIsAnErrorWithDidYouMean", "TestUnknownSkillSuggestsTheNearestName"},
	"doctor warns of a policy rule naming no capability":                               {"TestDoctorWarnsOfAPolicyRuleNamingNoCapability"},
	"an unknown key suggests the nearest key":                                          {"TestUnknownKeySuggestsTheNearestKey"},
	"pablo with no arguments off a terminal prints usage and exits 2":                  {"TestNoArgumentsOffATerminalIsAUsageError"},
	"a locked preset accepts narrowing flags":                                          {"TestLockedPresetAcceptsNoShellAndALowerModelCallCeiling", "TestLockedDeploymentAcceptsUnlistedNarrowing"},
}

// moduleTests are the names of the module's test, benchmark and fuzz
// functions.
func moduleTests(t *testing.T) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Za-z0-9_]+)\(`)
	names := map[string]bool{}
	err := filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "../.." && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, "_test.go") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllSubmatch(b, -1) {
				names[string(m[1])] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestEveryReferenceFlagAndCommandHasATest: each command and flag of
// REFERENCE §2 is on its command's parser and names tests that exist, as
// does each message issue 36 set out to fix; and
// every test docs/differences.md and the README cite exists, so a
// difference's evidence cannot go stale.
func TestEveryReferenceFlagAndCommandHasATest(t *testing.T) {
	tests := moduleTests(t)
	for item, names := range referenceCLI {
		if flag, ok := strings.CutPrefix(item, "--"); ok || strings.Contains(item, ": --") {
			cmd := "run"
			if c, f, found := strings.Cut(item, ": --"); found {
				cmd, flag = c, f
			}
			c, _ := lookup(cmd)
			if _, on := c.specs()[flag]; !on {
				t.Errorf("%s: pablo %s has no such flag", item, cmd)
			}
		}
		if len(names) == 0 {
			t.Errorf("%s names no test", item)
		}
		for _, n := range names {
			if !tests[n] {
				t.Errorf("%s names %s, which is no test of the module", item, n)
			}
		}
	}
	for msg, names := range whyMessages {
		for _, n := range names {
			if !tests[n] {
				t.Errorf("%q names %s, which is no test of the module", msg, n)
			}
		}
	}
	// Every run flag of the parser that the reference has is in the table.
	for _, f := range runFlags() {
		if slices.Contains([]string{"store", "script", "approve"}, f.name) {
			continue // Go additions, with tests of their own
		}
		if _, ok := referenceCLI["--"+f.name]; !ok {
			t.Errorf("run flag --%s is not in the table", f.name)
		}
	}
	cite := regexp.MustCompile("`((?:Test|Benchmark|Fuzz)[A-Za-z0-9_]+)")
	for _, doc := range []string{"../../docs/differences.md", "../../README.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range cite.FindAllSubmatch(b, -1) {
			if !tests[string(m[1])] {
				t.Errorf("%s cites %s, which is no test of the module", filepath.Base(doc), m[1])
			}
		}
	}
}
