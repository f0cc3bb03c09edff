package console_test

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting/tlstest"
	"github.com/tidemq/tide/tools/console"
)

// startAuthConsole runs a console against a NameServer alone (enough for
// sign-in, the role checks, which come before any broker call, and the
// audit) and returns its base URL.
func startAuthConsole(t *testing.T, mod func(*console.Options)) (string, *clock, string) {
	t.Helper()
	ns := nameservertest.Start(t)
	o := console.DefaultOptions()
	o.ListenAddr, o.NameServers, o.Logger, o.SampleInterval = "127.0.0.1:0", []string{ns}, quiet(), -1
	users, c := authOptions(t, &o)
	if mod != nil {
		mod(&o)
	}
	s := startServer(t, o)
	scheme := "http://"
	if o.CertFile != "" {
		scheme = "https://"
	}
	return scheme + s.Addr(), c, users
}

func do(t *testing.T, c *http.Client, method, u string, form url.Values, hdr map[string]string) (int, string, *http.Response) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// TestSignInRequired: without a session nothing but health, static files
// and the sign-in page answers; the session cookie's flags; the role
// table on hand-made requests; and no secret in any answer.
func TestSignInRequired(t *testing.T) {
	base, _, usersFile := startAuthConsole(t, func(o *console.Options) {
		o.Credentials.AccessKey, o.Credentials.SecretKey = "consoleAdmin", "console-secret-key"
	})
	for _, p := range []string{"/healthz", "/static/console.css", "/login"} {
		if code, _, _ := do(t, noRedirect, "GET", base+p, nil, nil); code != 200 {
			t.Errorf("%s without a session: %d", p, code)
		}
	}
	if code, _, resp := do(t, noRedirect, "GET", base+"/groups/g?x=1", nil, nil); code != http.StatusSeeOther ||
		resp.Header.Get("Location") != "/login?next=%2Fgroups%2Fg%3Fx%3D1" {
		t.Errorf("page without a session: %d %s", code, resp.Header.Get("Location"))
	}
	if code, body, _ := do(t, noRedirect, "GET", base+"/api/topics", nil, nil); code != 401 || !strings.Contains(body, `"error":"unauthorized: sign in first"`) {
		t.Errorf("API without a session: %d %s", code, body)
	}
	for _, p := range []string{"/groups/g/reset", "/api/groups/g/reset", "/dlq/resend", "/api/half/action"} {
		if code, _, _ := do(t, noRedirect, "POST", base+p, url.Values{"group": {"g"}}, nil); code != 401 {
			t.Errorf("POST %s without a session: %d", p, code)
		}
	}
	if code, body, _ := do(t, noRedirect, "POST", base+"/login", url.Values{"user": {"admin"}, "password": {"nope"}}, nil); code != 401 ||
		!strings.Contains(body, "wrong user name or password") || strings.Contains(body, "nope") {
		t.Errorf("wrong password: %d\n%s", code, body)
	}
	code, _, resp := do(t, noRedirect, "POST", base+"/login", url.Values{"user": {"viewer"}, "password": {"viewer-password"}, "next": {"//evil.example/"}}, nil)
	if code != http.StatusSeeOther || resp.Header.Get("Location") != "/cluster" {
		t.Fatalf("sign-in: %d to %q", code, resp.Header.Get("Location"))
	}
	sc := resp.Header.Get("Set-Cookie")
	for _, w := range []string{"tide_session=", "Path=/", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(sc, w) {
			t.Errorf("cookie %q lacks %s", sc, w)
		}
	}
	if strings.Contains(sc, "Secure") {
		t.Errorf("plain HTTP cookie marked Secure: %q", sc)
	}

	clients := map[string]*http.Client{}
	for _, u := range []string{"viewer", "operator", "admin"} {
		clients[u] = signIn(t, base, u)
	}
	// Each action as each role, by hand-made POSTs to the page and its
	// JSON twin: refused with 403 below the role the table names, past
	// the role check (here 400/404/502 from the action itself) at or above.
	for _, tc := range []struct {
		path string
		form url.Values
		need string
	}{
		{"/groups/nogroup/reset", url.Values{"topic": {"t"}, "time": {"0"}}, "operator"},
		{"/dlq/resend", url.Values{"group": {"nogroup"}, "id": {"0A"}}, "operator"},
		{"/half/action", url.Values{"broker": {"10.9.9.9:1"}, "offset": {"1"}, "action": {"resume"}}, "admin"},
		{"/half/action", url.Values{"broker": {"10.9.9.9:1"}, "offset": {"1"}, "action": {"commit"}}, "admin"},
		{"/half/action", url.Values{"broker": {"10.9.9.9:1"}, "offset": {"1"}, "action": {"rollback"}}, "admin"},
		{"/half/action", url.Values{"broker": {"10.9.9.9:1"}, "offset": {"1"}, "action": {"explode"}}, "admin"},
	} {
		rank := map[string]int{"viewer": 1, "operator": 2, "admin": 3}
		for user, c := range clients {
			for _, p := range []string{tc.path, "/api" + tc.path} {
				code, body, _ := do(t, c, "POST", base+p, tc.form, nil)
				allowed := rank[user] >= rank[tc.need]
				if allowed == (code == http.StatusForbidden) {
					t.Errorf("%s POST %s %v: %d %s", user, p, tc.form, code, body)
				}
				if !allowed && !strings.Contains(body, "takes the "+tc.need+" role") {
					t.Errorf("%s POST %s: refusal does not say why: %s", user, p, body)
				}
			}
		}
	}
	// The audit page is the admin's.
	if code, _, _ := do(t, clients["operator"], "GET", base+"/api/audit", nil, nil); code != 403 {
		t.Errorf("operator reads the audit: %d", code)
	}
	code, body, _ := do(t, clients["admin"], "GET", base+"/api/audit", nil, nil)
	var av console.AuditView
	if err := json.Unmarshal([]byte(body), &av); code != 200 || err != nil {
		t.Fatalf("audit: %d %v %s", code, err, body)
	}
	seen := map[string]bool{}
	for _, r := range av.Records {
		seen[r.User+" "+string(r.Action)+" "+r.Result] = true
	}
	for _, w := range []string{"viewer offset.reset forbidden", "operator half.commit forbidden", "operator offset.reset failed",
		"admin half.rollback failed", "admin sign-in failed", "viewer sign-in ok", "operator audit.read forbidden"} {
		if !seen[w] {
			t.Errorf("audit lacks %q: %v", w, seen)
		}
	}
	// No secret in any page or JSON twin: not the password, its hash, the
	// session id or the broker secret key.
	hashes, _ := os.ReadFile(usersFile)
	jar := clients["admin"].Jar.(*cookiejar.Jar)
	u, _ := url.Parse(base)
	secrets := []string{"admin-password", "console-secret-key", jar.Cookies(u)[0].Value}
	for _, line := range strings.Split(string(hashes), "\n") {
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 {
			secrets = append(secrets, parts[2][7:29]) // a piece of each hash's salt
		}
	}
	for _, p := range []string{"/cluster", "/api/cluster", "/topics", "/api/topics", "/audit", "/api/audit", "/login", "/groups", "/half", "/api/half"} {
		_, body, _ := do(t, clients["admin"], "GET", base+p, nil, nil)
		for _, s := range secrets {
			if strings.Contains(body, s) {
				t.Errorf("%s shows a secret (%.6s…)", p, s)
			}
		}
	}
	// Sign-out ends the session on the server, not just in the browser.
	old := jar.Cookies(u)[0]
	if code, _, _ := do(t, clients["admin"], "POST", base+"/logout", url.Values{}, nil); code != 200 {
		t.Fatalf("sign-out: %d", code)
	}
	replay := &http.Client{}
	code, _, _ = do(t, replay, "GET", base+"/api/topics", nil, map[string]string{"Cookie": old.Name + "=" + old.Value})
	if code != 401 {
		t.Fatalf("the signed-out session still serves: %d", code)
	}
}

// TestSessionEndsOnPasswordChange: a new password (or a removed user)
// ends the user's sessions; a new role applies at once.
func TestSessionEndsOnPasswordChange(t *testing.T) {
	base, _, users := startAuthConsole(t, nil)
	op, view := signIn(t, base, "operator"), signIn(t, base, "viewer")
	later := time.Now().Add(time.Minute)
	err := console.EditUsers(users, func(us map[string]console.User) error {
		h, _ := console.HashPassword("a-new-password")
		u := us["operator"]
		u.Hash = h
		us["operator"] = u
		v := us["viewer"]
		v.Role = console.RoleAdmin
		us["viewer"] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	os.Chtimes(users, later, later)
	if code, _, _ := do(t, op, "GET", base+"/api/topics", nil, nil); code != 401 {
		t.Fatalf("session after a password change: %d", code)
	}
	if code, _, _ := do(t, view, "GET", base+"/api/audit", nil, nil); code != 200 {
		t.Fatalf("promoted viewer reads the audit: %d", code)
	}
}

// TestProxyIdentity: the header of a trusted proxy names the user (its
// role from a role header, the users file or the default); the same
// header from any other address is ignored.
func TestProxyIdentity(t *testing.T) {
	trusted, _, _ := startAuthConsole(t, func(o *console.Options) {
		o.Auth.UsersFile = ""
		o.Auth.ProxyHeader, o.Auth.ProxyRoleHeader = "X-Forwarded-User", "X-Forwarded-Role"
		o.Auth.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	for _, tc := range []struct {
		hdr   map[string]string
		code  int
		audit int // GET /api/audit
	}{
		{map[string]string{"X-Forwarded-User": "sso.alice@example.com"}, 200, 403}, // default role viewer
		{map[string]string{"X-Forwarded-User": "sso.bob", "X-Forwarded-Role": "admin"}, 200, 200},
		{map[string]string{"X-Forwarded-User": "sso.bob", "X-Forwarded-Role": "root"}, 401, 401},
		{map[string]string{"X-Forwarded-User": "bad user"}, 401, 401},
		{nil, 401, 401},
	} {
		code, body, _ := do(t, noRedirect, "GET", trusted+"/api/topics", nil, tc.hdr)
		acode, _, _ := do(t, noRedirect, "GET", trusted+"/api/audit", nil, tc.hdr)
		if code != tc.code || acode != tc.audit {
			t.Errorf("%v: topics %d (want %d) audit %d (want %d) %s", tc.hdr, code, tc.code, acode, tc.audit, body)
		}
	}
	// A proxied viewer is refused an action like any viewer.
	code, body, _ := do(t, noRedirect, "POST", trusted+"/api/dlq/resend", url.Values{"group": {"g"}, "id": {"x"}},
		map[string]string{"X-Forwarded-User": "sso.alice"})
	if code != 403 || !strings.Contains(body, "sso.alice (viewer) may not dlq.resend") {
		t.Errorf("proxied viewer resend: %d %s", code, body)
	}
	// From an address not allow-listed the header means nothing; users
	// of the file still sign in with passwords.
	untrusted, _, _ := startAuthConsole(t, func(o *console.Options) {
		o.Auth.ProxyHeader = "X-Forwarded-User"
		o.Auth.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.99.0.0/16")}
	})
	if code, _, _ := do(t, noRedirect, "GET", untrusted+"/api/topics", nil, map[string]string{"X-Forwarded-User": "admin"}); code != 401 {
		t.Errorf("header from an untrusted address: %d", code)
	}
	c := signIn(t, untrusted, "operator")
	if code, _, _ := do(t, c, "GET", untrusted+"/api/topics", nil, map[string]string{"X-Forwarded-User": "admin"}); code != 200 {
		t.Errorf("password session with a stray header: %d", code)
	}
}

// TestConsoleTLS: with a certificate the console serves HTTPS only and
// its session cookie is Secure with the __Host- prefix.
func TestConsoleTLS(t *testing.T) {
	certs := tlstest.New(t)
	base, _, _ := startAuthConsole(t, func(o *console.Options) { o.CertFile, o.KeyFile = certs.Files.ServerCert, certs.Files.ServerKey })
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: certs.ClientConfig()},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	code, _, resp := do(t, c, "POST", base+"/login", url.Values{"user": {"admin"}, "password": {"admin-password"}}, nil)
	if code != http.StatusSeeOther {
		t.Fatalf("sign-in over TLS: %d", code)
	}
	sc := resp.Header.Get("Set-Cookie")
	for _, w := range []string{"__Host-tide_session=", "Secure", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(sc, w) {
			t.Errorf("TLS cookie %q lacks %s", sc, w)
		}
	}
	if resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Errorf("TLS state: %+v", resp.TLS)
	}
	plain := strings.Replace(base, "https://", "http://", 1)
	if resp, err := http.Get(plain + "/login"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("the TLS console answered plain HTTP")
		}
	}
}
