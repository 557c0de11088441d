package sourcemap

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVLQRoundTrip(t *testing.T) {
	t.Parallel()
	for _, fields := range [][]int{{0}, {0, 0, 0, 0}, {1, -1, 15, -16}, {16, 1000, -1000, 123456, 0}} {
		got, err := decodeVLQ(encodeVLQ(fields))
		require.NoError(t, err)
		assert.Equal(t, fields, got)
	}
	// Known encodings from the source map spec's examples.
	assert.Equal(t, "AAAA", encodeVLQ([]int{0, 0, 0, 0}))
	assert.Equal(t, "gBAAgB", encodeVLQ([]int{16, 0, 0, 16}))
	_, err := decodeVLQ("g")
	assert.Error(t, err)
	_, err = decodeVLQ("!")
	assert.Error(t, err)
}

func TestFixSourceMap(t *testing.T) {
	t.Parallel()
	// Line 1 unmapped, line 2 maps columns 0 and 4 to original 1:0 and 1:6,
	// line 3 maps column 2 to 2:2.
	in := `{"version":3,"sources":["a.ts"],"names":[],"mappings":";AAAA,IAAM;EACJ"}`
	out, err := Fix([]byte(in))
	require.NoError(t, err)
	var m struct{ Mappings string }
	require.NoError(t, json.Unmarshal(out, &m))

	type seg struct{ gen, src, line, col int }
	var segs []seg
	var col, line, srcCol int
	for i, l := range strings.Split(m.Mappings, ";") {
		col = 0
		if l == "" {
			continue
		}
		for _, s := range strings.Split(l, ",") {
			f, err := decodeVLQ(s)
			require.NoError(t, err)
			col += f[0]
			line += f[2]
			srcCol += f[3]
			segs = append(segs, seg{i + 1, col, line + 1, srcCol})
		}
	}
	// Both columns are one more than before; lines do not move.
	assert.Equal(t, []seg{{2, 1, 1, 1}, {2, 5, 1, 7}, {3, 3, 2, 3}}, segs)
}
