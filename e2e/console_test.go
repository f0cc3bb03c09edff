package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestConsoleSignIn: the web console of the stack takes a signed-in user
// of the compose demo's users file; the role is checked on the server for
// a hand-made action, and the audit names the real users.
func TestConsoleSignIn(t *testing.T) {
	s := need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ep, err := s.endpoint(ctx, "console", consolePort)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ep
	do := func(c *http.Client, method, path string, form url.Values) (int, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequestWithContext(ctx, method, base+path, body)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do(httpc, "GET", "/api/cluster", nil); code != http.StatusUnauthorized {
		t.Fatalf("without a session: %d %s", code, body)
	}
	users := map[string]*http.Client{}
	for _, u := range []string{"viewer", "operator", "admin"} {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 20 * time.Second}
		if code, body := do(c, "POST", "/login", url.Values{"user": {u}, "password": {"tide-" + u}}); code != 200 || !strings.Contains(body, `id="who"`) {
			t.Fatalf("sign in as %s: %d\n%s", u, code, body)
		}
		users[u] = c
	}
	if code, body := do(users["viewer"], "GET", "/api/cluster", nil); code != 200 || !strings.Contains(body, "broker-a") {
		t.Fatalf("viewer reads the cluster: %d %s", code, body)
	}
	resend := url.Values{"group": {"payment-service"}, "id": {"7F00000100002A9F0000000000000000"}}
	if code, body := do(users["viewer"], "POST", "/api/dlq/resend", resend); code != http.StatusForbidden ||
		!strings.Contains(body, "viewer (viewer) may not dlq.resend") {
		t.Fatalf("viewer's hand-made resend: %d %s", code, body)
	}
	// The operator passes the role check; the made-up dead letter then
	// fails on its own (200 with a failed result, or 404 without a DLQ).
	if code, body := do(users["operator"], "POST", "/api/dlq/resend", resend); code == http.StatusForbidden || code == http.StatusUnauthorized {
		t.Fatalf("operator's resend refused: %d %s", code, body)
	}
	if code, _ := do(users["operator"], "GET", "/api/audit", nil); code != http.StatusForbidden {
		t.Fatalf("operator reads the audit: %d", code)
	}
	code, body := do(users["admin"], "GET", "/api/audit", nil)
	var audit struct {
		Records []struct{ User, Action, Result string }
	}
	if err := json.Unmarshal([]byte(body), &audit); code != 200 || err != nil {
		t.Fatalf("audit: %d %v %s", code, err, body)
	}
	seen := map[string]bool{}
	for _, r := range audit.Records {
		seen[r.User+" "+r.Action+" "+r.Result] = true
	}
	for _, w := range []string{"viewer dlq.resend forbidden", "operator dlq.resend failed", "operator audit.read forbidden", "admin sign-in ok"} {
		if !seen[w] {
			t.Errorf("audit lacks %q: %v", w, seen)
		}
	}
}
