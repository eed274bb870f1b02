package ui

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// testToken is the login token of the test servers.
var testToken = strings.Repeat("t", 43)

// newTestServer serves a Server over svc with httptest.
func newTestServer(t *testing.T, svc Service) *httptest.Server {
	t.Helper()
	s, err := New(Config{Service: svc, Token: testToken, PageSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, s)
}

func serve(t *testing.T, s *Server) *httptest.Server {
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

// browser is an HTTP client with a cookie jar that does not follow
// redirects, so tests see each answer.
func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) *http.Response {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// login logs c in and returns the CSRF token of the agent page's forms.
func login(t *testing.T, ts *httptest.Server, c *http.Client) string {
	t.Helper()
	if resp := get(t, c, ts.URL+"/login?token="+testToken); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %s", resp.Status)
	}
	body := readBody(t, get(t, c, ts.URL+"/agents/"+fakeAgent))
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the agent page has no CSRF token:\n%s", body)
	}
	return m[1]
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// post sends a form from origin (none when empty).
func post(t *testing.T, c *http.Client, u, origin string, form url.Values) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// Without the token, or with a wrong one, login starts no session, and
// no page or action is served without a session.
func TestAccessNeedsTheToken(t *testing.T) {
	svc := newFakeService()
	ts := newTestServer(t, svc)
	c := browser(t)
	for _, u := range []string{"/login", "/login?token=", "/login?token=" + testToken + "x", "/login?token=" + strings.Repeat("u", 43)} {
		resp := get(t, c, ts.URL+u)
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
			t.Errorf("GET %s: %s, cookies %v; want 401 and no cookie", u, resp.Status, resp.Cookies())
		}
	}
	for _, u := range []string{"/", "/agents/" + fakeAgent, "/agents/" + fakeAgent + "/live"} {
		if resp := get(t, c, ts.URL+u); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a session: %s, want 401", u, resp.Status)
		}
	}
	forged := browser(t)
	u, _ := url.Parse(ts.URL)
	forged.Jar.SetCookies(u, []*http.Cookie{{Name: cookieName(testToken), Value: "made-up"}})
	if resp := get(t, forged, ts.URL+"/"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET / with a made-up session cookie: %s, want 401", resp.Status)
	}
	if resp := post(t, c, ts.URL+"/agents/"+fakeAgent+"/say", ts.URL, url.Values{"text": {"hi"}}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST say without a session: %s, want 401", resp.Status)
	}
	if got := svc.made(); len(got) != 0 {
		t.Errorf("actions made without a session: %v", got)
	}
	login(t, ts, c)
	if resp := get(t, c, ts.URL+"/"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET / after login: %s", resp.Status)
	}
}

// The session cookie is HttpOnly and SameSite=Strict, and Secure when the
// view is served over TLS.
func TestSessionCookieFlags(t *testing.T) {
	for _, tls := range []bool{false, true} {
		s, err := New(Config{Service: newFakeService(), Token: testToken, TLS: tls})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/login?token="+testToken, nil))
		cs := rec.Result().Cookies()
		if len(cs) != 1 {
			t.Fatalf("TLS %v: cookies %v, want one", tls, cs)
		}
		c := cs[0]
		if c.Name != cookieName(testToken) || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure != tls || c.Path != "/" {
			t.Errorf("TLS %v: cookie %+v: want HttpOnly, SameSite=Strict, Secure %v, Path /", tls, c, tls)
		}
	}
}

// An action with a missing or forged CSRF token, from another origin, or
// with neither Origin nor Referer is refused and reaches nothing; the
// same action from the page goes through.
func TestActionsRefuseForgedCSRFAndCrossOrigin(t *testing.T) {
	svc := newFakeService()
	ts := newTestServer(t, svc)
	c := browser(t)
	csrf := login(t, ts, c)
	other := browser(t)
	otherCSRF := login(t, ts, other) // a token of another session is forged for this one
	say := ts.URL + "/agents/" + fakeAgent + "/say"
	cases := []struct {
		name, origin string
		form         url.Values
	}{
		{"no CSRF token", ts.URL, url.Values{"text": {"a"}}},
		{"forged CSRF token", ts.URL, url.Values{"text": {"b"}, "csrf": {csrf[:len(csrf)-1] + "x"}}},
		{"another session's CSRF token", ts.URL, url.Values{"text": {"c"}, "csrf": {otherCSRF}}},
		{"cross-origin", "http://evil.example", url.Values{"text": {"d"}, "csrf": {csrf}}},
		{"opaque origin", "null", url.Values{"text": {"e"}, "csrf": {csrf}}},
		{"no Origin or Referer", "", url.Values{"text": {"f"}, "csrf": {csrf}}},
	}
	for _, tc := range cases {
		if resp := post(t, c, say, tc.origin, tc.form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %s, want 403", tc.name, resp.Status)
		}
	}
	if got := svc.made(); len(got) != 0 {
		t.Fatalf("refused actions reached the service: %v", got)
	}
	resp := post(t, c, say, ts.URL, url.Values{"text": {"hello"}, "csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("say from the page: %s\n%s", resp.Status, readBody(t, resp))
	}
	if got, want := svc.made(), []string{"say hello"}; !slices.Equal(got, want) {
		t.Errorf("actions %v, want %v", got, want)
	}
}

// Every answer, refusals and assets included, carries the strict CSP and
// forbids framing.
func TestSecurityHeaders(t *testing.T) {
	ts := newTestServer(t, newFakeService())
	c := browser(t)
	login(t, ts, c)
	for _, u := range []string{"/", "/agents/" + fakeAgent, "/assets/live.js", "/login", "/nowhere"} {
		resp := get(t, c, ts.URL+u)
		h := resp.Header
		if h.Get("Content-Security-Policy") != CSP || h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s (%s): CSP %q, X-Frame-Options %q, nosniff %q", u, resp.Status,
				h.Get("Content-Security-Policy"), h.Get("X-Frame-Options"), h.Get("X-Content-Type-Options"))
		}
	}
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(CSP, want) || strings.Contains(CSP, "unsafe-inline") {
			t.Errorf("CSP %q: want %q and no unsafe-inline", CSP, want)
		}
	}
}

// The token file is made once with mode 0600 and read back; one that
// others may read is refused.
func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	tok, err := LoadOrCreateToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, TokenFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v; want 0600", err, info.Mode().Perm())
	}
	again, err := LoadOrCreateToken(dir)
	if err != nil || again != tok || len(tok) < 32 {
		t.Fatalf("second load: %q, %v; want the same token %q", again, err, tok)
	}
	if err := os.Chmod(filepath.Join(dir, TokenFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateToken(dir); err == nil {
		t.Fatal("a token file others may read was accepted")
	}
}

// Only loopback addresses are served without --ui-allow-remote.
func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		remote bool
		ok     bool
	}{
		{"127.0.0.1:8080", false, true}, {"[::1]:8080", false, true}, {"localhost:0", false, true},
		{"0.0.0.0:8080", false, false}, {":8080", false, false}, {"10.0.0.2:80", false, false},
		{"0.0.0.0:8080", true, true}, {"nonsense", true, false},
	} {
		if err := CheckAddr(tc.addr, tc.remote); (err == nil) != tc.ok {
			t.Errorf("CheckAddr(%q, %v) = %v, want ok %v", tc.addr, tc.remote, err, tc.ok)
		}
	}
}

// Two nodes' views on one machine keep their sessions apart: cookies are
// kept per host, not per port, so each view's cookie has its own name.
func TestTwoViewsOnOneHost(t *testing.T) {
	var views []*httptest.Server
	for _, tok := range []string{testToken, strings.Repeat("v", 43)} {
		s, err := New(Config{Service: newFakeService(), Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, serve(t, s))
	}
	c := browser(t)
	for i, tok := range []string{testToken, strings.Repeat("v", 43)} {
		if resp := get(t, c, views[i].URL+"/login?token="+tok); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("login to view %d: %s", i, resp.Status)
		}
	}
	for i, v := range views {
		if resp := get(t, c, v.URL+"/"); resp.StatusCode != http.StatusOK {
			t.Errorf("view %d after logging in to both: %s, want 200", i, resp.Status)
		}
	}
}

// Behind a proxy that ends TLS (Config.TLS), the view's origin is https:
// an action from https://host passes the origin check, one from
// http://host does not.
func TestOriginBehindTLS(t *testing.T) {
	for _, tc := range []struct {
		origin string
		ok     bool
	}{{"https://view.example", true}, {"http://view.example", false}} {
		r := httptest.NewRequest(http.MethodPost, "http://view.example/agents/x/say", nil)
		r.Header.Set("Origin", tc.origin)
		if got := sameOrigin(r, true); got != tc.ok {
			t.Errorf("Origin %s behind TLS: %v, want %v", tc.origin, got, tc.ok)
		}
	}
}
