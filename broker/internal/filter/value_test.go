package filter

import (
	"math"
	"testing"
)

func TestParseJavaInteger(t *testing.T) {
	tests := []struct {
		s    string
		k    kind
		want int64
		ok   bool
	}{
		{"0", kInt, 0, true},
		{"-0", kInt, 0, true},
		{"+7", kInt, 7, true},
		{"0007", kInt, 7, true},
		{"2147483647", kInt, math.MaxInt32, true},
		{"-2147483648", kInt, math.MinInt32, true},
		{"2147483648", kInt, 0, false},
		{"-2147483649", kInt, 0, false},
		{"2147483648", kLong, 2147483648, true},
		{"9223372036854775807", kLong, math.MaxInt64, true},
		{"-9223372036854775808", kLong, math.MinInt64, true},
		{"9223372036854775808", kLong, 0, false},
		{"-9223372036854775809", kLong, 0, false},
		{"99999999999999999999", kLong, 0, false},
		{"", kInt, 0, false},
		{"+", kInt, 0, false},
		{"-", kInt, 0, false},
		{" 1", kInt, 0, false},
		{"1 ", kInt, 0, false},
		{"1_000", kInt, 0, false},
		{"1.0", kInt, 0, false},
		{"0x10", kInt, 0, false},
		{"--1", kInt, 0, false},
	}
	for _, tc := range tests {
		got, ok := parseJavaInteger(tc.s, tc.k)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseJavaInteger(%q, %d) = %d, %v; want %d, %v", tc.s, tc.k, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseJavaDouble(t *testing.T) {
	tests := []struct {
		s    string
		want float64
		ok   bool
	}{
		{"1", 1, true},
		{"-1.5", -1.5, true},
		{"+1.5", 1.5, true},
		{" \t1.5\n", 1.5, true},
		{".5", 0.5, true},
		{"5.", 5, true},
		{"1e3", 1000, true},
		{"1E-3", 0.001, true},
		{"1.5f", 1.5, true},
		{"1.5D", 1.5, true},
		{"0x1p4", 16, true},
		{"0X1.8P1", 3, true},
		{"0x1p4d", 16, true},
		{"Infinity", math.Inf(1), true},
		{"-Infinity", math.Inf(-1), true},
		{"1e400", math.Inf(1), true},
		{"1e-400", 0, true},
		{"", 0, false},
		{"   ", 0, false},
		{".", 0, false},
		{"e5", 0, false},
		{"1e", 0, false},
		{"1e+", 0, false},
		{"1.5ff", 0, false},
		{"inf", 0, false},
		{"infinity", 0, false},
		{"nan", 0, false},
		{"NaNd", 0, false},
		{"0x10", 0, false},
		{"0x_1p0", 0, false},
		{"1_0", 0, false},
		{"1,5", 0, false},
		{"abc", 0, false},
	}
	for _, tc := range tests {
		got, ok := parseJavaDouble(tc.s)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseJavaDouble(%q) = %g, %v; want %g, %v", tc.s, got, ok, tc.want, tc.ok)
		}
	}
	if f, ok := parseJavaDouble("NaN"); !ok || !math.IsNaN(f) {
		t.Errorf("parseJavaDouble(NaN) = %g, %v", f, ok)
	}
	if f, ok := parseJavaDouble("-0.0"); !ok || !math.Signbit(f) {
		t.Errorf("parseJavaDouble(-0.0) = %g, %v; want negative zero", f, ok)
	}
}

func TestCompareDouble(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		a, b float64
		want int
	}{
		{1, 2, -1},
		{2, 1, 1},
		{1, 1, 0},
		{math.Copysign(0, -1), 0, -1},
		{0, math.Copysign(0, -1), 1},
		{nan, nan, 0},
		{nan, inf, 1},
		{inf, nan, -1},
		{-inf, nan, -1},
		{nan, -1, 1},
	}
	for _, tc := range tests {
		if got := compareDouble(tc.a, tc.b); got != tc.want {
			t.Errorf("compareDouble(%g, %g) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestCompareMixed(t *testing.T) {
	i := func(n int64) value { return value{k: kInt, i: n} }
	l := func(n int64) value { return value{k: kLong, i: n} }
	d := func(f float64) value { return value{k: kDouble, f: f} }
	s := func(v string) value { return value{k: kString, s: v} }
	tests := []struct {
		name string
		l, r value
		want int
		ok   bool
	}{
		{"int long", i(1), l(2), -1, true},
		{"long int", l(3), i(2), 1, true},
		{"int double", i(1), d(1.5), -1, true},
		{"double long", d(2.5), l(2), 1, true},
		{"int string", i(5), s("5"), 0, true},
		{"int string too big", i(5), s("3000000000"), 0, false},
		{"long string", l(5), s("3000000000"), -1, true},
		{"double string", d(5), s(" 5 "), 0, true},
		{"string int", s("6"), i(5), 1, true},
		{"string double bad", s("x"), d(5), 0, false},
		{"string bool", s("TRUE"), trueValue, 0, true},
		{"string bool other", s("no"), trueValue, -1, true},
		{"bool string is a Java ClassCastException", trueValue, s("true"), 0, false},
		{"bool number is less", trueValue, i(1), -1, true},
		{"number bool is less", i(1), trueValue, -1, true},
		{"bools", falseValue, trueValue, -1, true},
		{"strings", s("a"), s("b"), -1, true},
	}
	for _, tc := range tests {
		got, ok := compare(tc.l, tc.r)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s: compare = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
