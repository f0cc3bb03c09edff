package console

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Audit errors.
var (
	// ErrForbidden: the signed-in user's role does not permit the action
	// (answered 403).
	ErrForbidden = errors.New("forbidden")
	// ErrRateLimited: too many failed sign-ins (answered 429).
	ErrRateLimited = errors.New("rate limited")
)

// Sign-in and sign-out are audited like actions.
const (
	ActSignIn  Action = "sign-in"
	ActSignOut Action = "sign-out"
)

// AuditRecord is one audited action: who (the signed-in user, never a
// form field), what, on what, from where, and how it ended.
type AuditRecord struct {
	Time   time.Time `json:"time"`
	User   string    `json:"user"`
	Role   Role      `json:"role"`
	Remote string    `json:"remote"`
	Action Action    `json:"action"`
	Target string    `json:"target"`
	// Result is "ok", "forbidden", "failed" or "rate-limited"; Error
	// says why when it is not ok.
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
}

// AuditView is the audit page: the newest records first.
type AuditView struct {
	Records []AuditRecord `json:"records"`
	Kept    int           `json:"kept"`
}

// auditLog keeps the last records in memory for the audit page (the
// console's log is the durable record). Safe for concurrent use.
type auditLog struct {
	mu   sync.Mutex
	recs []AuditRecord // ring
	next int
	full bool
}

const auditKept = 1000

func (a *auditLog) add(r AuditRecord) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.recs == nil {
		a.recs = make([]AuditRecord, auditKept)
	}
	a.recs[a.next] = r
	a.next = (a.next + 1) % auditKept
	a.full = a.full || a.next == 0
}

// newest returns the records, newest first.
func (a *auditLog) newest() []AuditRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.next
	if a.full {
		n = auditKept
	}
	out := make([]AuditRecord, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, a.recs[(a.next-i+auditKept)%auditKept])
	}
	return out
}

// audit records action on target by the request's identity with its
// outcome (err nil: ok), in the log and on the audit page.
func (s *Server) audit(r *http.Request, action Action, target string, err error) {
	id := identityOf(r)
	if id == nil {
		id = &Identity{}
	}
	s.auditAs(r, id.User, id.Role, action, target, err)
}

func (s *Server) auditAs(r *http.Request, user string, role Role, action Action, target string, err error) {
	rec := AuditRecord{Time: s.now().UTC(), User: user, Role: role, Remote: r.RemoteAddr, Action: action, Target: target, Result: "ok"}
	if err != nil {
		rec.Error = err.Error()
		switch {
		case errors.Is(err, ErrForbidden):
			rec.Result = "forbidden"
			rec.Error = strings.TrimPrefix(rec.Error, ErrForbidden.Error()+": ")
		case errors.Is(err, ErrRateLimited):
			rec.Result = "rate-limited"
			rec.Error = strings.TrimPrefix(rec.Error, ErrRateLimited.Error()+": ")
		default:
			rec.Result = "failed"
		}
	}
	s.audits.add(rec)
	s.log.Info("audit", "user", rec.User, "role", rec.Role.String(), "action", string(rec.Action), "target", rec.Target,
		"result", rec.Result, "remote", rec.Remote, "err", rec.Error)
}
