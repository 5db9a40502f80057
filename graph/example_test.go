package graph_test

import (
	"fmt"

	"github.com/pabloagent/pablo/graph"
)

// A message that refuses a name no capability answers to suggests the
// nearest known one: a native tool, or a node of the deployment's graph.
func ExampleGraph_Nearest() {
	b := graph.NewBuilder("fp", false)
	b.Node(graph.Node{ID: "mcp:records", Kind: graph.KindMCPServer})
	g := b.Graph()
	fmt.Printf("%q\n", g.Nearest("fs.reed"))
	fmt.Printf("%q\n", g.Nearest("recrods"))
	fmt.Printf("%q\n", g.Nearest("nothing-like-it"))
	// Output:
	// "fs.read"
	// "records"
	// ""
}
