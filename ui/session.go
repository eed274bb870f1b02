package ui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"sync"
	"time"
)

// CookiePrefix starts the name of the session cookie. The name goes on
// with a digest of the login token: cookies are kept per host, not per
// port, so two nodes' views on one machine need cookies of their own.
const CookiePrefix = "capsule_session_"

// cookieName is the session cookie's name for the view of token.
func cookieName(token string) string {
	sum := sha256.Sum256([]byte("capsule ui session cookie\x00" + token))
	return CookiePrefix + hex.EncodeToString(sum[:6])
}

// sessionTTL bounds a session's life; maxSessions bounds how many the
// server keeps (the oldest goes first).
const (
	sessionTTL  = 12 * time.Hour
	maxSessions = 64
)

// session is one logged-in browser: its CSRF token goes into every form
// of its pages and must come back with every action.
type session struct {
	csrf    string
	created time.Time
}

// sessions holds the live sessions by their cookie value.
type sessions struct {
	mu   sync.Mutex
	now  func() time.Time
	name string // the cookie's name
	m    map[string]session
}

func newSessions(now func() time.Time, name string) *sessions {
	return &sessions{now: now, name: name, m: map[string]session{}}
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail (Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// start makes a new session and returns its cookie value.
func (s *sessions) start() (string, session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	if len(s.m) >= maxSessions {
		oldest := ""
		for id, x := range s.m {
			if oldest == "" || x.created.Before(s.m[oldest].created) {
				oldest = id
			}
		}
		delete(s.m, oldest)
	}
	id, x := randomToken(), session{csrf: randomToken(), created: s.now()}
	s.m[id] = x
	return id, x
}

func (s *sessions) expire() {
	for id, x := range s.m {
		if s.now().Sub(x.created) > sessionTTL {
			delete(s.m, id)
		}
	}
}

// of returns the session of r's cookie.
func (s *sessions) of(r *http.Request) (session, bool) {
	c, err := r.Cookie(s.name)
	if err != nil {
		return session{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	x, ok := s.m[c.Value]
	return x, ok
}

// cookie is the session cookie for id: HttpOnly, SameSite=Strict, and
// Secure when the view is served over TLS.
func (s *sessions) cookie(id string, secure bool) *http.Cookie {
	return &http.Cookie{Name: s.name, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: secure, MaxAge: int(sessionTTL / time.Second)}
}

// equal compares two secrets in constant time.
func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
