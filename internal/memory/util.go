package memory

import "slices"

func sortStrings(s []string) { slices.Sort(s) }
