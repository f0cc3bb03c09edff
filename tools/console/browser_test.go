package console_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// screenshots, when set, is the directory the browser test writes
// console-<page>.png into (make console-screenshots uses docs/images).
var screenshots = flag.String("screenshots", os.Getenv("TIDE_CONSOLE_SCREENSHOTS"), "directory to write page screenshots into")

// chromium finds a Chromium or Chrome binary. Without one the test is
// skipped, except in CI (CI=true), where it must run.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium found: install the Debian packages chromium and chromium-driver to run the browser test"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: required)")
	}
	t.Skip(msg)
	return ""
}

// TestBrowser drives the console's main pages in a real headless Chromium:
// it reads them as a user would, follows links, submits the search and
// resend forms, and checks what the pages show.
func TestBrowser(t *testing.T) {
	bin := chromium(t)
	f := newFixture(t)
	ctx, run, text := browser(t, bin)
	shot := func(name string) {
		t.Helper()
		if *screenshots == "" {
			return
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(*screenshots, "console-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	contains := func(where, got string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Fatalf("%s: %q not in:\n%s", where, w, got)
			}
		}
	}

	signInAs := func(user, password string) {
		t.Helper()
		run("sign in as "+user, chromedp.Navigate(f.base+"/login"), chromedp.WaitVisible(chromedp.CSS("#login")),
			chromedp.SetValue(chromedp.CSS(`#login input[name=user]`), user),
			chromedp.SetValue(chromedp.CSS(`#login input[name=password]`), password),
			chromedp.Submit(chromedp.CSS(`#login`)), chromedp.WaitVisible(chromedp.CSS("#flash, #error, #who")))
	}
	browserSignIn(t, ctx, f, run, text, signInAs, shot)
	signInAs("operator", "operator-password")
	contains("signed in", text("#who"), "operator")

	// Cluster: wait until the sampler has a put rate to show.
	run("cluster", chromedp.Navigate(f.base+"/cluster"), chromedp.WaitVisible(chromedp.CSS(".card.broker")))
	waitFor(t, "put TPS on the cluster page", func() bool {
		run("reload", chromedp.Navigate(f.base+"/cluster"), chromedp.WaitVisible(chromedp.CSS(".put-tps")))
		return text(".put-tps") != "–"
	})
	contains("cluster", text(".card.broker"), "broker-a", "ASYNC_MASTER", f.broker, "Disk used", "1 slave(s)")
	shot("cluster")

	// Topics → order-events by following the link.
	run("topics", chromedp.Navigate(f.base+"/topics"), chromedp.WaitVisible(chromedp.CSS("#topics")))
	contains("topics", text("#topics"), "order-events", "inventory-events", "payment-events")
	shot("topics")
	run("open topic", chromedp.Click(`//table[@id="topics"]//a[text()="order-events"]`),
		chromedp.WaitVisible(chromedp.CSS("#queues")))
	contains("topic", text("h1"), "order-events")
	contains("topic groups", text("#groups"), "inventory-service", "payment-service")
	shot("topic")

	// Consumer group page with members and lag.
	run("group", chromedp.Navigate(f.base+"/groups/inventory-service"), chromedp.WaitVisible(chromedp.CSS("#lag")))
	contains("group members", text("#members"), "127.0.0.1", "GO")
	contains("group lag", text("#total-lag"), "0")
	shot("group")
	run("groups", chromedp.Navigate(f.base+"/groups"), chromedp.WaitVisible(chromedp.CSS("#groups")))
	contains("groups", text("#groups"), "inventory-service", "payment-service", "DLQ")

	// Message search by key through the form, then the message's page.
	run("search", chromedp.Navigate(f.base+"/messages"), chromedp.WaitVisible(chromedp.CSS("#search")),
		chromedp.SetValue(chromedp.CSS(`#search input[name=topic]`), "order-events"),
		chromedp.SetValue(chromedp.CSS(`#search input[name=key]`), f.order),
		chromedp.Submit(chromedp.CSS(`#search`)), chromedp.WaitVisible(chromedp.CSS("#results")))
	contains("search results", text("#results"), "OrderCreated", "OrderPaid", f.created.MsgID)
	shot("messages")
	run("open message", chromedp.Click(`//table[@id="results"]//a[text()="`+f.created.MsgID+`"]`),
		chromedp.WaitVisible(chromedp.CSS("#deliveries")))
	contains("message properties", text("#properties"), "traceparent", "UNIQ_KEY")
	contains("message deliveries", text("#deliveries"), "inventory-service", "consumed", "payment-service", "dead-lettered")
	shot("message")

	// Orders list: recent orders from the order service, filtered by
	// status, then one order's timeline by following its link.
	run("orders", chromedp.Navigate(f.base+"/orders"), chromedp.WaitVisible(chromedp.CSS("#orders")))
	contains("orders", text("#orders"), f.order, "ord-1003", "ord-1002", "ord-1000", "PAID", "CANCELLED", "u-alice", "4200",
		"2026-12-01 16:20:03")
	idWidth, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector("#find input[name=id]").getBoundingClientRect().width`))
	if err != nil {
		t.Fatal(err)
	}
	uuidWidth, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => { const i = document.querySelector("#find input[name=id]");
		const c = document.createElement("canvas").getContext("2d"); c.font = getComputedStyle(i).font;
		return c.measureText("01a23265-fa26-7226-91a4-67bb24b74b5a").width; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if idWidth < uuidWidth {
		t.Fatalf("order id box is %.0f px wide, a UUID needs %.0f px", idWidth, uuidWidth)
	}
	shot("orders")
	run("filter", chromedp.SetValue(chromedp.CSS(`#filter select[name=status]`), "PAID"),
		chromedp.Submit(chromedp.CSS(`#filter select[name=status]`)), chromedp.WaitVisible(chromedp.CSS("#orders")))
	filtered := text("#orders")
	contains("filtered orders", filtered, f.order, "PAID")
	if strings.Contains(filtered, "ord-1003") || strings.Contains(filtered, "CANCELLED") {
		t.Fatalf("status filter PAID shows other orders:\n%s", filtered)
	}
	run("order", chromedp.Click(`//table[@id="orders"]//a[code[text()="`+f.order+`"]]`), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	tl := text("#timeline")
	contains("order timeline", tl, "OrderCreated", "StockReserved", "PaymentSucceeded", "OrderPaid", "payment-service: dead-lettered",
		"inventory-service: retried")
	if strings.Index(tl, "OrderCreated") > strings.Index(tl, "OrderPaid") {
		t.Fatalf("timeline out of order:\n%s", tl)
	}
	contains("order summary", text("#event-count"), "4")
	contains("order reconciliation", text("table.reconcile"), "Run", "Job", "Discrepancies", "Repaired", "payments", "done")
	page, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page, "127.0.0.1:") {
		t.Fatalf("order page shows an internal address:\n%s", page)
	}
	shot("order")
	// An order nobody knows has no events and no reconciliation runs.
	run("unknown order", chromedp.Navigate(f.base+"/orders/nope"), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	contains("unknown order", text("main"), "No message carries this order id", "None: no run of the payment service")

	// Pending half messages.
	run("half", chromedp.Navigate(f.base+"/half"), chromedp.WaitVisible(chromedp.CSS("#half")))
	contains("half", text("#half"), "payment-producer", "payment-events", "pending")

	// An operator sees no half message actions (an admin's).
	if n := count(t, ctx, `#half form`); n != 0 {
		t.Fatalf("an operator sees %d half message forms", n)
	}

	// DLQ: the operator selects the dead letter and resends it.
	run("dlq", chromedp.Navigate(f.base+"/dlq?group=payment-service"), chromedp.WaitVisible(chromedp.CSS("#letters")))
	contains("dlq", text("#letters"), "order-events", "OrderCreated", f.order)
	shot("dlq")
	run("resend", chromedp.Click(chromedp.CSS(`#letters input.all`)),
		chromedp.Click(chromedp.CSS(`#resend button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS("#resend-results")))
	contains("resend flash", text("#flash"), "Resent 1 of 1", "by operator")
	contains("resend results", text("#resend-results"), f.dlq, "%RETRY%payment-service", "OK")
	shot("dlq-resend")

	// Session expiry: idle past the timeout, the next page asks to sign
	// in again, and then returns to that page.
	f.clock.Add(31 * time.Minute)
	run("expired", chromedp.Navigate(f.base+"/groups"), chromedp.WaitVisible(chromedp.CSS("#login")))
	contains("expired", text("#error"), "session has ended")
	run("sign in again", chromedp.SetValue(chromedp.CSS(`#login input[name=user]`), "admin"),
		chromedp.SetValue(chromedp.CSS(`#login input[name=password]`), "admin-password"),
		chromedp.Submit(chromedp.CSS(`#login`)), chromedp.WaitVisible(chromedp.CSS("#groups")))
	// The absolute timeout (the fixture's: 2 h) ends even a busy session.
	for range 5 { // 5 × 29 min > 2 h, never idle for 30 min
		f.clock.Add(29 * time.Minute)
		run("busy", chromedp.Navigate(f.base+"/audit"), chromedp.WaitVisible(chromedp.CSS("#audit, #login")))
		if count(t, ctx, "#login") > 0 {
			break
		}
	}
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.Contains(loc, "/login") {
		t.Fatalf("a session older than 2 h still serves: %s", loc)
	}

	// The admin reads the audit: the real users, their actions, the
	// refusals and the sign-ins.
	signInAs("admin", "admin-password")
	run("audit", chromedp.Navigate(f.base+"/audit"), chromedp.WaitVisible(chromedp.CSS("#audit")))
	audit := text("#audit")
	contains("audit", audit, "operator\toperator\tdlq.resend", "viewer\tviewer\tdlq.resend", "forbidden", "sign-in", "rate-limited",
		"sign-out", f.dlq)
	shot("audit")
	// The admin sees the half message actions.
	run("half as admin", chromedp.Navigate(f.base+"/half"), chromedp.WaitVisible(chromedp.CSS("#half")))
	if n := count(t, ctx, `#half form select[name=action]`); n != 1 {
		t.Fatalf("the admin sees %d half message action forms, want 1", n)
	}
	shot("half")
}

// browser starts a headless Chromium (bin) until the test ends and
// returns its context and two helpers: run steps (failing the test on an
// error) and read an element's text.
func browser(t *testing.T, bin string) (context.Context, func(string, ...chromedp.Action[chromedp.Void]), func(string) string) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.WindowSize(1400, 900),
		chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, 6*time.Minute) // a bound on hangs: page loads take seconds under a load average of 55
	t.Cleanup(cancel)
	// The resend form asks for confirmation: accept every dialog.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	go acceptDialogs(ctx)

	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return s
	}
	return ctx, run, text
}

// TestBrowserController reads the controller page in Chromium: the
// leader, broker-a's master, epoch and SyncStateSet, then, after the
// master died and the page was reloaded, the new master, the new epoch
// and the election in the log.
func TestBrowserController(t *testing.T) {
	bin := chromium(t)
	f := newCtlFixture(t)
	ctx, run, text := browser(t, bin)
	run("sign in", chromedp.Navigate(f.base+"/login"), chromedp.WaitVisible(chromedp.CSS("#login")),
		chromedp.SetValue(chromedp.CSS(`#login input[name=user]`), "viewer"),
		chromedp.SetValue(chromedp.CSS(`#login input[name=password]`), "viewer-password"),
		chromedp.Submit(chromedp.CSS(`#login`)), chromedp.WaitVisible(chromedp.CSS("#who")))
	group := `.ctl-group[data-group="broker-a"] `
	load := func() {
		t.Helper()
		run("controller page", chromedp.Navigate(f.base+"/controller"), chromedp.WaitVisible(chromedp.CSS("#ctl-elections")))
	}
	// the nav link leads there
	run("nav", chromedp.Click(chromedp.CSS(`header nav a[href="/controller"]`)), chromedp.WaitVisible(chromedp.CSS("#ctl-nodes")))
	for {
		load()
		if strings.HasPrefix(text(group+".ctl-sss"), "2 replica(s)") {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("broker-a's SyncStateSet never showed 2 replicas")
		}
	}
	for sel, want := range map[string]string{"#ctl-leader": "n0 (" + f.ctl + ")", "#ctl-nodes": "LEADER",
		group + ".ctl-master": f.masterAddr, group + ".ctl-epoch": "1", "#ctl-elections": "0 → 1",
		"#ctl-elections-source": "replicated election history"} {
		if got := text(sel); !strings.Contains(got, want) {
			t.Fatalf("%s: %q, want %q", sel, got, want)
		}
	}

	f.killMaster(t)
	for {
		load()
		if strings.Contains(text(group+".ctl-master"), f.slaveAddr) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the new master never showed")
		}
	}
	for sel, want := range map[string]string{group + ".ctl-epoch": "2", group + ".ctl-sss": "1 replica(s)",
		"#ctl-elections": "1 → 2"} {
		if got := text(sel); !strings.Contains(got, want) {
			t.Fatalf("%s: %q, want %q", sel, got, want)
		}
	}
	if got := text("#ctl-elections"); !strings.Contains(got, f.masterAddr+" → "+f.slaveAddr) {
		t.Fatalf("election log %q, want %s → %s", got, f.masterAddr, f.slaveAddr)
	}
}

// browserSignIn checks sign-in in Chromium: every page asks for it,
// failed attempts are rate limited with a clear message, the cookie's
// flags, a viewer sees no action and is refused a hand-made POST, and
// sign-out.
func browserSignIn(t *testing.T, ctx context.Context, f *fixture, run func(string, ...chromedp.Action[chromedp.Void]), text func(string) string,
	signInAs func(user, password string), shot func(string)) {
	t.Helper()
	contains := func(where, got string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Fatalf("%s: %q not in:\n%s", where, w, got)
			}
		}
	}
	run("no session", chromedp.Navigate(f.base+"/cluster"), chromedp.WaitVisible(chromedp.CSS("#login")))
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.Contains(loc, "/login?next=%2Fcluster") {
		t.Fatalf("a page without a session went to %s, want the sign-in page", loc)
	}
	if n := count(t, ctx, "header nav"); n != 0 {
		t.Fatal("the sign-in page shows the navigation")
	}
	shot("login")
	// Five wrong passwords for viewer, then even the right one is refused
	// until the window moves on.
	for i := range 5 {
		signInAs("viewer", "wrong-password")
		contains(fmt.Sprintf("wrong password %d", i+1), text("#error"), "wrong user name or password")
	}
	signInAs("viewer", "viewer-password")
	contains("rate limited", text("#error"), "too many failed sign-ins for viewer", "try again in 15 minute(s)")
	f.clock.Add(15 * time.Minute)
	signInAs("viewer", "viewer-password")
	contains("viewer signed in", text("#who"), "viewer")

	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{f.base}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cookies.Cookies) != 1 {
		t.Fatalf("cookies: %+v", cookies.Cookies)
	}
	c := cookies.Cookies[0]
	if c.Name != "tide_session" || !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Secure || len(c.Value) < 43 {
		t.Fatalf("session cookie %s: httpOnly %v sameSite %q secure %v (plain HTTP) value of %d bytes", c.Name, c.HTTPOnly, c.SameSite, c.Secure, len(c.Value))
	}
	if js, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie`)); js != "" {
		t.Fatalf("a script reads the cookie: %q", js)
	}

	// A viewer sees no action form, and a POST made by hand with the
	// viewer's session is refused by the server.
	run("viewer group", chromedp.Navigate(f.base+"/groups/payment-service"), chromedp.WaitVisible(chromedp.CSS("#lag")))
	if strings.Contains(text("main"), "Reset offsets") {
		t.Fatal("a viewer sees the offset reset form")
	}
	run("viewer dlq", chromedp.Navigate(f.base+"/dlq?group=payment-service"), chromedp.WaitVisible(chromedp.CSS("#letters")))
	if n := count(t, ctx, `#resend button, #letters input[type=checkbox]`); n != 0 {
		t.Fatalf("a viewer sees %d resend controls", n)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch("/dlq/resend", {method: "POST",
		body: new URLSearchParams({group: "payment-service", id: "`+f.dlq+`"})}).then(r => r.status + " " + r.text()).then(x => x)`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch("/api/dlq/resend", {method: "POST",
		body: new URLSearchParams({group: "payment-service", id: "`+f.dlq+`"})}).then(async r => r.status + " " + await r.text())`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp, "403 ") || !strings.Contains(resp, "viewer (viewer) may not dlq.resend: it takes the operator role") ||
		!strings.HasPrefix(got, "403") {
		t.Fatalf("a viewer's hand-made resend: page %q, api %q", got, resp)
	}

	run("sign out", chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitVisible(chromedp.CSS("#login")))
	contains("signed out", text("#flash"), "Signed out")
	run("after sign-out", chromedp.Navigate(f.base+"/topics"), chromedp.WaitVisible(chromedp.CSS("#login")))
}

// count returns how many elements match sel on the current page.
func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(sel)+`).length`))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// acceptDialogs answers every JavaScript dialog (the confirm() of action
// forms) with OK, until ctx ends.
func acceptDialogs(ctx context.Context) {
	for _, err := range chromedp.Events(ctx, page.JavascriptDialogOpening) {
		if err != nil {
			return
		}
		if _, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true}); err != nil {
			return
		}
	}
}
