package acp

// The Pablo extensions a client may negotiate, each by setting
// clientCapabilities._meta[name] = true in initialize. The agent echoes
// the ones it accepted in agentCapabilities._meta; an extension whose
// requirements were not negotiated too is not accepted. A client that
// negotiates none gets standard ACP only.
const (
	// ExtV2 puts correlation metadata (run, session, the native seq range,
	// trace, deployment) on every session/update and terminal metadata on
	// every prompt's answer, under _meta["pablo/v2"].
	ExtV2 = "pablo/v2"
	// ExtTaskV2 makes the terminal metadata carry the whole task object
	// instead of its outcome. Requires ExtV2.
	ExtTaskV2 = "pablo/task-v2"
	// ExtModelRoute sends each model call's start and finish as the
	// notification _pablo/v1/model_attempt. Requires ExtV2.
	ExtModelRoute = "pablo/model-route-v1"
	// ExtSkills sends each Skill activation as the notification
	// _pablo/v1/skill. Requires ExtV2.
	ExtSkills = "pablo/skills-v1"
	// ExtCompaction sends each context compaction's start and finish as
	// the notification _pablo/v1/compaction: its compaction-v1 record,
	// summary_bytes, and the summary as null with content_redacted (the
	// summary is content). Requires ExtV2.
	ExtCompaction = "pablo/compaction-v1"
	// ExtOutput keeps output_validation in the task. Requires ExtV2 and
	// ExtTaskV2.
	ExtOutput = "pablo/output-v1"
	// ExtOutputRepair keeps output_repair in the task. Requires ExtV2,
	// ExtTaskV2 and ExtOutput.
	ExtOutputRepair = "pablo/output-repair-v1"
	// ExtElicitation lets an MCP server's form elicitation reach the
	// client: the agent sends it as the request _pablo/v1/elicitation and
	// the client answers accept (with the form's content), decline or
	// cancel. Without it every elicitation of the session's tasks is
	// declined. It requires nothing else.
	ExtElicitation = "pablo/elicitation-v1"
	// ExtAuthorization lets an OAuth MCP server's authorization step reach
	// the client: the agent sends the authorization URL as the request
	// _pablo/v1/authorize for the client to open in a browser, while the
	// redirect comes back to the host's own listener. Without it the host
	// uses the grants it has stored. It requires nothing else.
	ExtAuthorization = "pablo/authorization-v1"
)

// The extension notification methods.
const (
	MethodModelAttempt = "_pablo/v1/model_attempt"
	MethodSkill        = "_pablo/v1/skill"
	MethodCompaction   = "_pablo/v1/compaction"
)

// MethodElicitation is the extension request ExtElicitation sends.
const MethodElicitation = "_pablo/v1/elicitation"

// MethodAuthorize is the extension request ExtAuthorization sends.
const MethodAuthorize = "_pablo/v1/authorize"

// extension is one row of the negotiation table.
type extension struct {
	name     string
	requires []string
}

// extensionTable lists the extensions in the order a requirement comes
// before what requires it.
func extensionTable() []extension {
	return []extension{
		{ExtV2, nil},
		{ExtTaskV2, []string{ExtV2}},
		{ExtModelRoute, []string{ExtV2}},
		{ExtSkills, []string{ExtV2}},
		{ExtCompaction, []string{ExtV2}},
		{ExtOutput, []string{ExtV2, ExtTaskV2}},
		{ExtOutputRepair, []string{ExtV2, ExtTaskV2, ExtOutput}},
		{ExtElicitation, nil},
		{ExtAuthorization, nil},
	}
}

// extensions is the set a connection negotiated.
type extensions struct {
	v2, task, route, skills, compaction, output, repair, elicit, authorize bool
}

// negotiate accepts the requested extensions whose requirements are
// accepted too and returns them with their echo.
func negotiate(requested map[string]any) (extensions, map[string]any) {
	accepted := map[string]bool{}
	for _, e := range extensionTable() {
		if on, _ := requested[e.name].(bool); !on {
			continue
		}
		ok := true
		for _, r := range e.requires {
			ok = ok && accepted[r]
		}
		accepted[e.name] = ok
	}
	var echo map[string]any
	for name, ok := range accepted {
		if ok {
			if echo == nil {
				echo = map[string]any{}
			}
			echo[name] = true
		}
	}
	return extensions{
		v2: accepted[ExtV2], task: accepted[ExtTaskV2], route: accepted[ExtModelRoute],
		skills: accepted[ExtSkills], compaction: accepted[ExtCompaction], output: accepted[ExtOutput], repair: accepted[ExtOutputRepair],
		elicit: accepted[ExtElicitation], authorize: accepted[ExtAuthorization],
	}, echo
}
