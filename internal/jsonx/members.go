package jsonx

// EachMember calls fn with the name (as written, without its quotes) and
// the value (as written) of each member of obj, in order, until fn returns
// false. obj must already be known to be valid JSON. It reports whether obj
// is an object and every call returned true.
func EachMember(obj []byte, fn func(name, value []byte) bool) bool {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i++
	for {
		i = SkipSpace(obj, i)
		if i >= len(obj) {
			return false
		}
		switch obj[i] {
		case '}':
			return true
		case ',':
			i = SkipSpace(obj, i+1)
		}
		if i >= len(obj) || obj[i] != '"' {
			return false
		}
		end := SkipString(obj, i)
		name := obj[i+1 : end-1]
		i = SkipSpace(obj, SkipSpace(obj, end)+1) // past the colon
		start := i
		i = SkipValue(obj, i)
		if start >= i || !fn(name, obj[start:i:i]) {
			return false
		}
	}
}

// EachElement calls fn with each element (as written) of arr, in order,
// until fn returns false. arr must already be known to be valid JSON. It
// reports whether arr is an array and every call returned true.
func EachElement(arr []byte, fn func(value []byte) bool) bool {
	i := SkipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return false
	}
	i++
	for {
		i = SkipSpace(arr, i)
		if i >= len(arr) {
			return false
		}
		switch arr[i] {
		case ']':
			return true
		case ',':
			i = SkipSpace(arr, i+1)
		}
		start := i
		i = SkipValue(arr, i)
		if start >= i || !fn(arr[start:i:i]) {
			return false
		}
	}
}

// SkipSpace returns the index of the first byte at or past b[i] that is
// not JSON whitespace.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// SkipString returns the index past the string that starts at b[i].
func SkipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// SkipValue returns the index past the valid JSON value that starts at
// b[i]: a string, an object or array (strings inside them skipped whole),
// or a literal or number (up to the next delimiter).
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = SkipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n' {
		i++
	}
	return i
}
