package termtext_test

import (
	"fmt"

	"github.com/pabloagent/pablo/termtext"
)

// A value shown on one line (an approval prompt's field) keeps no control:
// the escape that would clear the screen is written as its escape.
func ExamplePrintable() {
	fmt.Println(termtext.Printable("rm -rf build\x1b[2J\n"))
	// Output: rm -rf build\u001b[2J\u000a
}

// A model's answer arrives in deltas; a control sequence split across two
// of them is escaped all the same, and newlines pass.
func ExampleStream() {
	var s termtext.Stream
	var out []byte
	for _, delta := range []string{"done\n\x1b", "]52;c;aGk=\x07 ok"} {
		out = s.Append(out, delta)
	}
	out = s.Flush(out)
	fmt.Printf("%s\n", out)
	// Output:
	// done
	// \u001b]52;c;aGk=\u0007 ok
}
