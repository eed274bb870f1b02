// Package ui is the node's web view (issue 17): server-rendered pages of
// the fleet, an agent and its timeline, live updates over server-sent
// events, and the operator's actions (say, switch model, approve or deny,
// stop or start, move), each a POST that goes through the node's local
// API (api.LocalService), so that it meets the same checks and errors as
// the CLI.
//
// Access needs the token the node keeps in its data folder (TokenFile,
// mode 0600): GET /login?token=... starts a session (an HttpOnly,
// SameSite=Strict cookie); every action carries the session's CSRF token
// and must come from the page's own origin. Every answer carries a strict
// Content-Security-Policy. Pages read without JavaScript; one small
// script of this package's own (assets/live.js) appends live events.
//
// Only cmd/capsule (and the browser test, e2e/browser) imports this package.
package ui
