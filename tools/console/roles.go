package console

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Role is what a signed-in user may do. Roles are ordered: each one may
// do everything the ones below it may.
type Role int

// The roles, lowest first.
const (
	RoleNone Role = iota
	// RoleViewer reads every page and its JSON twin.
	RoleViewer
	// RoleOperator also resets consumer offsets and resends dead letters.
	RoleOperator
	// RoleAdmin also decides half messages (resume checks, force commit or
	// rollback), changes anything else on the brokers, and reads the audit
	// page.
	RoleAdmin
)

var roleNames = []string{"none", "viewer", "operator", "admin"}

func (r Role) String() string {
	if r < 0 || int(r) >= len(roleNames) {
		return fmt.Sprintf("Role(%d)", int(r))
	}
	return roleNames[r]
}

// MarshalJSON writes the role's name.
func (r Role) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

// UnmarshalJSON reads a role's name ("none" too).
func (r *Role) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == "none" {
		*r = RoleNone
		return nil
	}
	x, err := ParseRole(s)
	*r = x
	return err
}

// ParseRole reads viewer, operator or admin (any case).
func ParseRole(s string) (Role, error) {
	for i, n := range roleNames[1:] {
		if strings.EqualFold(s, n) {
			return Role(i + 1), nil
		}
	}
	return RoleNone, fmt.Errorf("unknown role %q (viewer, operator, admin)", s)
}

// Action names a thing a console user does; the role table says which
// role it takes.
type Action string

// The console's actions.
const (
	ActRead        Action = "read"         // every page and JSON twin but the audit
	ActResetOffset Action = "offset.reset" // POST /groups/{group}/reset
	ActResendDLQ   Action = "dlq.resend"   // POST /dlq/resend
	ActHalfResume  Action = "half.resume"  // POST /half/action action=resume
	ActHalfCommit  Action = "half.commit"  // POST /half/action action=commit
	ActHalfRollbck Action = "half.rollback"
	ActReadAudit   Action = "audit.read" // GET /audit
)

// roleTable is the least role each action takes. An action missing from
// it is refused to everyone (a new action must be added here first).
var roleTable = map[Action]Role{
	ActRead:        RoleViewer,
	ActResetOffset: RoleOperator,
	ActResendDLQ:   RoleOperator,
	ActHalfResume:  RoleAdmin,
	ActHalfCommit:  RoleAdmin,
	ActHalfRollbck: RoleAdmin,
	ActReadAudit:   RoleAdmin,
}

// Allowed reports whether role may do action.
func (r Role) Allowed(a Action) bool {
	need, ok := roleTable[a]
	return ok && r >= need && r <= RoleAdmin
}

// halfAction maps the half message form's action to its Action.
func halfActionOf(action string) (Action, bool) {
	switch action {
	case "resume":
		return ActHalfResume, true
	case "commit":
		return ActHalfCommit, true
	case "rollback":
		return ActHalfRollbck, true
	}
	return "", false
}
