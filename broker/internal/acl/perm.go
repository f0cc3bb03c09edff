package acl

import "strings"

// Perm is a permission bit set, with RocketMQ's values.
type Perm byte

// Permission bits (RocketMQ's Permission class).
const (
	Deny Perm = 1      // refuses whatever else is set
	Any  Perm = 1 << 1 // needed: PUB or SUB is enough
	Pub  Perm = 1 << 2
	Sub  Perm = 1 << 3
)

// ParsePerm parses "PUB", "SUB", "PUB|SUB", "SUB|PUB" or "DENY". Anything
// else, including the empty string, is DENY: a typo must never grant
// access (RocketMQ does the same).
func ParsePerm(s string) Perm {
	switch strings.ReplaceAll(strings.TrimSpace(s), " ", "") {
	case "PUB":
		return Pub
	case "SUB":
		return Sub
	case "PUB|SUB", "SUB|PUB":
		return Pub | Sub
	default:
		return Deny
	}
}

// String renders p as in the file.
func (p Perm) String() string {
	switch {
	case p&Deny != 0:
		return "DENY"
	case p&(Pub|Sub) == Pub|Sub:
		return "PUB|SUB"
	case p&Pub != 0:
		return "PUB"
	case p&Sub != 0:
		return "SUB"
	case p&Any != 0:
		return "ANY"
	}
	return "DENY"
}

// Allows reports whether owned grants needed.
func (owned Perm) Allows(needed Perm) bool {
	if owned&Deny != 0 {
		return false
	}
	if needed&Any != 0 {
		return owned&(Pub|Sub) != 0
	}
	return needed&owned != 0
}
