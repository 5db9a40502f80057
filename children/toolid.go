package children

// ToolID is the capability ID of the subagent tool.
const ToolID = "subagent"
