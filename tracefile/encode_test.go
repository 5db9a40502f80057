package tracefile

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pabloagent/pablo/event"
)

// Every field of an event, set on a text delta or a tool output, either
// sends the event through encoding/json (plainText refuses it) or is
// written by the hand encoder exactly as encoding/json writes it. The
// fields are found by reflection, so a field added to event.Event,
// event.EventData or event.AgentRef without teaching plainText or
// appendText about it fails here: the hand encoder cannot silently drop
// it.
func TestHandEncoderKnowsEveryEventField(t *testing.T) {
	fields := 0
	for _, typ := range []event.Type{event.TextDelta, event.ToolOutput} {
		base := textEvent(typ, "text", "id", "parent", 1)
		eachLeaf(t, reflect.TypeOf(base), nil, "Event", func(index []int, name string) {
			if name == "Event.EventData.Type" {
				return // the kind under test
			}
			fields++
			ev := base
			if !setSample(reflect.ValueOf(&ev).Elem().FieldByIndex(index)) {
				t.Fatalf("%s: no sample value for its kind; give setSample one", name)
			}
			for _, capture := range []bool{false, true} {
				tw := &Writer{opts: Options{CaptureContent: capture}}
				if !plainText(&ev) {
					continue // encoded by encoding/json, field and all
				}
				want, err := tw.encode(ev, true)
				if err != nil {
					t.Fatal(err)
				}
				got := appendText(nil, &ev, capture, ev.Text, tw.header(&ev))
				if !sameJSON(t, got, want) {
					t.Errorf("%s on %s (capture %v): the hand encoder writes\n %s\nencoding/json writes\n %s\nlist the field in plainText or write it in appendText", name, typ, capture, got, want)
				}
			}
		})
	}
	if fields < 20 {
		t.Fatalf("only %d fields visited", fields)
	}
}

// eachLeaf calls f with the index path and name of every field of the
// struct type typ, descending into embedded and nested structs.
func eachLeaf(t *testing.T, typ reflect.Type, index []int, name string, f func([]int, string)) {
	t.Helper()
	for i := range typ.NumField() {
		sf := typ.Field(i)
		if !sf.IsExported() {
			t.Fatalf("%s.%s: an unexported field the encoders cannot see", name, sf.Name)
		}
		path := append(append([]int(nil), index...), i)
		if sf.Type.Kind() == reflect.Struct {
			eachLeaf(t, sf.Type, path, name+"."+sf.Name, f)
			continue
		}
		f(path, name+"."+sf.Name)
	}
}

// setSample sets v to a value that is not its zero value and that
// encoding/json writes even under omitempty; false when v's kind has none.
func setSample(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString("sample<\u2028")
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		v.SetUint(9)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Slice:
		if v.Type() != reflect.TypeOf(json.RawMessage(nil)) {
			return false
		}
		v.Set(reflect.ValueOf(json.RawMessage(`{"sample":1}`)))
	default:
		return false
	}
	return true
}
