package strictjson_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/acs-project/acs/events/strictjson"
)

// BenchmarkParseManyKeys parses objects of 4k, 16k and 64k distinct keys
// and reports ns/key. A parse that checked each key against every earlier
// one would be quadratic (4× the time per key at each step, and a 32 MiB
// body would hold a core for hours); this one grows only with the cost of
// larger allocations.
func BenchmarkParseManyKeys(b *testing.B) {
	for _, n := range []int{4000, 16000, 64000} {
		var sb strings.Builder
		sb.WriteByte('{')
		for i := 0; i < n; i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `"k%07d":1`, i)
		}
		sb.WriteByte('}')
		data := []byte(sb.String())
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := strictjson.Parse(data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
		})
	}
}
