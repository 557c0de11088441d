package journalfile

import (
	"encoding/json"
	"testing"

	"github.com/crw-dev/crw/journal"
)

// BenchmarkRowChecksum is what the checksum adds to a row of a typical size (about 250
// bytes of JSON): sealing it when it is appended, checking it when it is read. Compare with
// BenchmarkAppend, the whole of an append's work before its commit.
func BenchmarkRowChecksum(b *testing.B) {
	data, err := json.Marshal(&journal.Row{
		Seq: 42, Type: journal.TypeCompleted, Call: "c42",
		Output: json.RawMessage(`{"summary":"the plan has three steps and each names its files","steps":["read","edit","test"]}`),
		Tokens: &journal.Tokens{Input: 1200, CachedInput: 800, Output: 300, Total: 1500},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("seal", func(b *testing.B) {
		buf := make([]byte, len(data), len(data)+sumLen)
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			copy(buf, data)
			_ = seal(buf[:len(data)])
		}
	})
	b.Run("unseal", func(b *testing.B) {
		v := seal(append([]byte(nil), data...))
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := unseal(42, v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
