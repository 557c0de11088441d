package result

import "testing"

func TestOutputDepth(t *testing.T) {
	cases := []struct {
		data  string
		limit int
		want  int
	}{
		{`"x"`, 10, 0},
		{`12`, 10, 0},
		{`{}`, 10, 1},
		{`[[1],[[2]],{"a":{}}]`, 10, 3},
		{`{"a":"[[[\"{{{","b":["\\",[]]}`, 10, 3},
		{`[[[[[[`, 2, 3},
	}
	for _, c := range cases {
		if got := OutputDepth([]byte(c.data), c.limit); got != c.want {
			t.Errorf("OutputDepth(%s, %d) = %d, want %d", c.data, c.limit, got, c.want)
		}
	}
}
