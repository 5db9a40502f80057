package providers

import (
	"strings"
	"testing"

	"github.com/pabloagent/pablo/model"
)

// BenchmarkParse32Deltas parses a Chat Completions stream of 32 deltas of
// 16 bytes (the reference measurement's final answer) with usage.
func BenchmarkParse32Deltas(b *testing.B) {
	deltas := make([]string, 32)
	for i := range deltas {
		deltas[i] = strings.Repeat("x", 15) + " "
	}
	for _, c := range []struct {
		name  string
		body  []byte
		parse func([]byte, func(string) error) (*model.Response, error)
	}{
		{"chat", []byte(chatWire{cost: true}.text(deltas, true)), parseChat},
		{"responses", []byte(respWire{}.text(deltas, true)), parseResponses},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.parse(c.body, func(string) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
