package protocol

import "testing"

func TestBadNameByte(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int
	}{
		{"", -1},
		{"TopicTest", -1},
		{"%RETRY%group_1|x-y", -1},
		{"a b", 1},
		{"topic.name", 5},
		{"标签", 0},
		{"ok\n", 2},
	} {
		if got := BadNameByte(tc.name); got != tc.want {
			t.Errorf("BadNameByte(%q) = %d, want %d", tc.name, got, tc.want)
		}
	}
}
