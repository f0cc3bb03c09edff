package api

// Enum is the one mapping between a service's domain values (D, such as
// biz.Status) and its API's protobuf enum (P), stated once for both
// directions so that they cannot drift apart.
type Enum[D, P comparable] struct {
	toAPI    map[D]P
	toDomain map[P]D
}

// NewEnum returns the Enum of pairs (domain value: API value); pairs must
// be one to one.
func NewEnum[D, P comparable](pairs map[D]P) Enum[D, P] {
	e := Enum[D, P]{toAPI: pairs, toDomain: make(map[P]D, len(pairs))}
	for d, p := range pairs {
		e.toDomain[p] = d
	}
	return e
}

// API returns d's API value; the zero value (a protobuf enum's
// UNSPECIFIED) when d has none.
func (e Enum[D, P]) API(d D) P { return e.toAPI[d] }

// Domain returns p's domain value and true; the zero value and false when
// p has none (such as UNSPECIFIED).
func (e Enum[D, P]) Domain(p P) (D, bool) {
	d, ok := e.toDomain[p]
	return d, ok
}
