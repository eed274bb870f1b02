package ui

import (
	"embed"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/agentcapsule/capsule/api"
)

//go:embed assets
var assets embed.FS

// Service is what the web view reads and acts through: the node's local
// API with its approvals, its paged journal read, working memory and
// recorded workspace. *api.LocalClient
// implements it, so every action meets the checks of the CLI's calls.
type Service interface {
	api.LocalService
	api.Approver
	api.EventReader
	api.MemoryReader
	api.WorkspaceReader
}

// Config configures a Server.
type Config struct {
	// Service is the node's local API.
	Service Service
	// Token is the login token (LoadOrCreateToken).
	Token string
	// TLS marks a view served over TLS: the session cookie is then Secure.
	TLS bool
	// Logger logs refused requests; nil logs nothing.
	Logger *slog.Logger
	// Now is the clock of session expiry; nil is time.Now.
	Now func() time.Time
	// PageSize is how many events one timeline page shows (default 100).
	PageSize int
	// Operator is who approvals and denials are recorded as by default
	// (the form may name another); "" is "operator".
	Operator string
}

// CSP is the Content-Security-Policy of every answer: nothing but this
// origin's own files, no inline script or style, never framed.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// Server is the web view, an http.Handler.
type Server struct {
	cfg      Config
	sessions *sessions
	pages    *pages
	mux      *http.ServeMux
}

// New returns the web view of cfg.Service.
func New(cfg Config) (*Server, error) {
	if cfg.Service == nil || len(cfg.Token) < 32 {
		return nil, errors.New("ui: new: a service and a token of at least 32 characters are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Operator == "" {
		cfg.Operator = "operator"
	}
	if cfg.PageSize <= 0 || cfg.PageSize > api.MaxEventPage {
		cfg.PageSize = 100
	}
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, sessions: newSessions(cfg.Now, cookieName(cfg.Token)), pages: p, mux: http.NewServeMux()}
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	static, _ := fs.Sub(assets, "assets/static")
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /login", s.login)
	s.mux.HandleFunc("GET /{$}", s.reader(s.fleet))
	s.mux.HandleFunc("GET /agents/{id}", s.reader(s.agent))
	s.mux.HandleFunc("GET /agents/{id}/live", s.reader(s.live))
	s.mux.HandleFunc("GET /agents/{id}/moves", s.reader(s.moves))
	s.mux.HandleFunc("GET /agents/{id}/workspace", s.reader(s.workspace))
	for _, a := range s.actions() {
		s.mux.HandleFunc("POST /agents/{id}/"+a.name, s.action(s.do(a)))
	}
}

// ServeHTTP sets the security headers of every answer and serves r.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer Chromium sends a
	// same-origin POST with Origin "null", which sameOrigin refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	s.mux.ServeHTTP(w, r)
}

// login checks the token and starts a session, then sends the browser
// to the fleet page (so the token leaves the address bar).
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !equal(r.URL.Query().Get("token"), s.cfg.Token) {
		s.refuse(w, r, http.StatusUnauthorized, "the login token is missing or wrong: open the address `capsule ui open` prints")
		return
	}
	id, _ := s.sessions.start()
	http.SetCookie(w, s.sessions.cookie(id, s.cfg.TLS))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// reader passes only requests of a live session.
func (s *Server) reader(h func(http.ResponseWriter, *http.Request, session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		x, ok := s.sessions.of(r)
		if !ok {
			s.refuse(w, r, http.StatusUnauthorized, "not logged in: open the address `capsule ui open` prints")
			return
		}
		h(w, r, x)
	}
}

// action passes only POSTs of a live session from this origin that carry
// the session's CSRF token.
func (s *Server) action(h func(http.ResponseWriter, *http.Request, session)) http.HandlerFunc {
	return s.reader(func(w http.ResponseWriter, r *http.Request, x session) {
		if !sameOrigin(r, s.cfg.TLS) {
			s.refuse(w, r, http.StatusForbidden, "cross-origin request refused")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 6*api.MaxSayText)
		if !equal(r.PostFormValue("csrf"), x.csrf) {
			s.refuse(w, r, http.StatusForbidden, "the form's CSRF token is missing or wrong: reload the page")
			return
		}
		h(w, r, x)
	})
}

// sameOrigin reports whether r's Origin (or, without one, its Referer)
// is the origin r was sent to; a request with neither is refused. tls
// says the browser reaches the view over TLS (r.TLS is nil behind a
// proxy that ends TLS).
func sameOrigin(r *http.Request, tls bool) bool {
	scheme := "http"
	if r.TLS != nil || tls {
		scheme = "https"
	}
	want := scheme + "://" + r.Host
	if o := r.Header.Get("Origin"); o != "" {
		return o == want
	}
	ref, err := url.Parse(r.Header.Get("Referer"))
	return err == nil && ref.Scheme == scheme && ref.Host == r.Host
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.cfg.Logger.Info("ui: refused", "method", r.Method, "path", r.URL.Path, "status", status, "why", msg)
	s.pages.render(w, status, "refused", view{Title: http.StatusText(status), Error: msg})
}
