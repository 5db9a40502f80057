package jsonx

// EachMember calls fn with the name (as written, without its quotes) and
// the value (as written) of each member of obj, in order, until fn returns
// false. obj must already be known to be valid JSON. It reports whether obj
// is an object and every call returned true.
func EachMember(obj []byte, fn func(name, value []byte) bool) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) {
			return false
		}
		switch obj[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(obj, i+1)
		}
		if i >= len(obj) || obj[i] != '"' {
			return false
		}
		end := skipString(obj, i)
		name := obj[i+1 : end-1]
		i = skipSpace(obj, skipSpace(obj, end)+1) // past the colon
		start := i
		i = skipValue(obj, i)
		if start >= i || !fn(name, obj[start:i:i]) {
			return false
		}
	}
}

// EachElement calls fn with each element (as written) of arr, in order,
// until fn returns false. arr must already be known to be valid JSON. It
// reports whether arr is an array and every call returned true.
func EachElement(arr []byte, fn func(value []byte) bool) bool {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return false
	}
	i++
	for {
		i = skipSpace(arr, i)
		if i >= len(arr) {
			return false
		}
		switch arr[i] {
		case ']':
			return true
		case ',':
			i = skipSpace(arr, i+1)
		}
		start := i
		i = skipValue(arr, i)
		if start >= i || !fn(arr[start:i:i]) {
			return false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index past the string that starts at b[i].
func skipString(b []byte, i int) int {
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

// skipValue returns the index past the valid JSON value that starts at
// b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
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
