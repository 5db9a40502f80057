package config

import "reflect"

// Clone returns a deep copy of v: every map, slice and pointer it reaches
// through exported fields is copied, so changing the copy changes nothing
// of v. Values behind unexported fields and interfaces are shared, which
// is safe for the option types: none holds mutable state there. It is how
// a resolved deployment hands out its options without giving up its own.
func Clone[T any](v T) T {
	var out T
	src := reflect.ValueOf(&v).Elem()
	dst := reflect.ValueOf(&out).Elem()
	deepCopy(dst, src)
	return out
}

// deepCopy sets dst, which is settable, to a deep copy of src.
func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		deepCopy(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			deepCopy(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Array:
		for i := range src.Len() {
			deepCopy(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			v := reflect.New(src.Type().Elem()).Elem()
			deepCopy(v, it.Value())
			m.SetMapIndex(it.Key(), v)
		}
		dst.Set(m)
	case reflect.Struct:
		// The whole value first (unexported fields included), then a
		// deep copy of each exported field over it.
		dst.Set(src)
		for i := range src.NumField() {
			if src.Type().Field(i).IsExported() {
				deepCopy(dst.Field(i), src.Field(i))
			}
		}
	default:
		dst.Set(src)
	}
}
