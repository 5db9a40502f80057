package ledger

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The records that carry a decision write themselves with a MarshalJSON of
// their own (see decision.go), which names every field again. A field added
// to the record and not to its MarshalJSON would silently never reach the
// store: TestRecordEncodersKnowEveryField sets every field and holds each
// encoder to encoding/json's bytes for the record without its method, but
// for the decision, which is written without its trail.
func TestRecordEncodersKnowEveryField(t *testing.T) {
	type plainCall CallRecord
	type plainDecision DecisionRecord
	type plainReport CallReport
	for _, c := range []struct {
		name       string
		own, plain func() ([]byte, error)
	}{
		{"CallRecord", func() ([]byte, error) { var v CallRecord; fill(reflect.ValueOf(&v).Elem()); return json.Marshal(v) },
			func() ([]byte, error) {
				var v CallRecord
				fill(reflect.ValueOf(&v).Elem())
				return json.Marshal(plainCall(v))
			}},
		{"DecisionRecord", func() ([]byte, error) { var v DecisionRecord; fill(reflect.ValueOf(&v).Elem()); return json.Marshal(v) },
			func() ([]byte, error) {
				var v DecisionRecord
				fill(reflect.ValueOf(&v).Elem())
				return json.Marshal(plainDecision(v))
			}},
		{"CallReport", func() ([]byte, error) { var v CallReport; fill(reflect.ValueOf(&v).Elem()); return json.Marshal(v) },
			func() ([]byte, error) {
				var v CallReport
				fill(reflect.ValueOf(&v).Elem())
				return json.Marshal(plainReport(v))
			}},
	} {
		own, err := c.own()
		if err != nil {
			t.Fatal(err)
		}
		plain, err := c.plain()
		if err != nil {
			t.Fatal(err)
		}
		var o, p map[string]any
		if err := json.Unmarshal(own, &o); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(plain, &p); err != nil {
			t.Fatal(err)
		}
		d, ok := p["decision"].(map[string]any)
		if !ok {
			t.Fatalf("%s: the filled record has no decision: %s", c.name, plain)
		}
		delete(d, "trail") // the ledger keeps a decision without its trail
		if !reflect.DeepEqual(o, p) {
			t.Errorf("%s: its MarshalJSON writes\n%s\nencoding/json writes every field as\n%s", c.name, own, plain)
		}
	}
}

// fill sets every settable field of v to a value that is not zero, so no
// omitempty or omitzero hides it.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(3)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(Limit{}) {
			v.Set(reflect.ValueOf(Max(3)))
			return
		}
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				fill(v.Field(i))
			}
		}
	}
}
