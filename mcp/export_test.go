package mcp

import "log"

// FaultServerCommand is the absolute path of the suite's fault server
// (examples/mcpservers/fault), built once, for the package's examples: a
// real stdio MCP server they can open and call.
func FaultServerCommand() string {
	path, err := buildFault()
	if err != nil {
		log.Fatal(err)
	}
	return path
}
