package ids_test

import (
	"fmt"

	"github.com/pabloagent/pablo/internal/ids"
)

func ExampleSequential() {
	var src ids.Source = ids.NewSequential(41)
	fmt.Println(src.NewID())
	// Output: 00000000-0000-4000-8000-00000000002a
}
