package ui

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

// view is what a page template is given.
type view struct {
	Title  string
	Error  string
	CSRF   string
	Info   api.NodeInfo
	Peers  []api.Peer
	Agents []api.AgentStatus
	Agent  *api.AgentStatus
	Page   timelinePage
	Models []modelChoice
	By     string
	// Memory is the agent's working memory; MemoryErr says why it is
	// not shown (the page still is).
	Memory    *api.WorkingMemory
	MemoryErr string
	Moves     []pastMove
	Workspace *api.Workspace
}

// timelinePage is one page of an agent's timeline.
type timelinePage struct {
	Items        []item
	Total        int
	Start, End   int    // the page holds events [Start, End)
	Older, Newer string // links to the pages around it, "" at the ends
	Live         string // the event stream's address, on the newest page only
}

// modelChoice is a provider and API the model form offers.
type modelChoice struct{ Provider, API string }

// modelChoices are the providers and APIs this release renders for
// (api.DefaultAPI, api.ModelAPIs): the form's choices; the node checks
// the model as it does for `capsule agent model`.
var modelChoices = []modelChoice{
	{"openai", "responses"}, {"openai", "chat"}, {"anthropic", "messages"},
	{"google", "generateContent"}, {"ollama", "chat"},
}

// pages holds the parsed templates, one set per page.
type pages struct{ sets map[string]*template.Template }

func parsePages() (*pages, error) {
	p := &pages{sets: map[string]*template.Template{}}
	funcs := template.FuncMap{"chartWidth": func(n int) int { return 20 + n*30 }}
	for _, name := range []string{"fleet", "agent", "refused", "moves", "workspace"} {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "assets/templates/layout.tmpl", "assets/templates/item.tmpl", "assets/templates/"+name+".tmpl")
		if err != nil {
			return nil, fmt.Errorf("ui: templates: %w", err)
		}
		p.sets[name] = t
	}
	return p, nil
}

// render writes page name with status; a template error is a 500.
func (p *pages) render(w http.ResponseWriter, status int, name string, v view) {
	var buf bytes.Buffer
	if err := p.sets[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		http.Error(w, "ui: render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// renderItem writes one timeline item, as the live stream sends it.
func (p *pages) renderItem(it item) (string, error) {
	var buf bytes.Buffer
	err := p.sets["agent"].ExecuteTemplate(&buf, "item", it)
	return buf.String(), err
}

// statusOf maps an error of the local API to an HTTP status.
func statusOf(err error) int {
	var e *api.Error
	switch {
	case errors.As(err, &e) && e.Status != 0:
		return e.Status
	case errors.Is(err, api.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, api.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, api.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, api.ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, api.ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// fleet shows this node, its peers and its agents.
func (s *Server) fleet(w http.ResponseWriter, r *http.Request, x session) {
	v := view{Title: "Fleet", CSRF: x.csrf}
	var err error
	if v.Info, err = s.cfg.Service.Info(r.Context()); err == nil {
		if v.Peers, err = s.cfg.Service.Peers(r.Context()); err == nil {
			v.Agents, err = s.cfg.Service.Agents(r.Context())
		}
	}
	status := http.StatusOK
	if err != nil {
		v.Error, status = err.Error(), statusOf(err)
	}
	s.pages.render(w, status, "fleet", v)
}

// agent shows one agent and a page of its timeline.
func (s *Server) agent(w http.ResponseWriter, r *http.Request, x session) {
	s.agentPage(w, r, x, http.StatusOK, "")
}

// agentPage renders the agent page with status and, when an action was
// refused, its error.
func (s *Server) agentPage(w http.ResponseWriter, r *http.Request, x session, status int, actionErr string) {
	id := r.PathValue("id")
	v := view{Title: "Agent " + id, CSRF: x.csrf, Error: actionErr, Models: modelChoices, By: s.cfg.Operator}
	st, err := s.cfg.Service.Agent(r.Context(), id)
	if err != nil {
		v.Error = err.Error()
		s.pages.render(w, statusOf(err), "refused", v)
		return
	}
	v.Agent = &st
	if m, merr := s.cfg.Service.WorkingMemory(r.Context(), id); merr == nil {
		v.Memory = &m
	} else {
		v.MemoryErr = merr.Error()
	}
	if v.Peers, err = s.cfg.Service.Peers(r.Context()); err == nil {
		v.Page, err = s.timeline(r, id)
	}
	if err != nil {
		v.Error, status = err.Error(), statusOf(err)
	}
	s.pages.render(w, status, "agent", v)
}

// timeline reads the page of the request's ?before (the newest without).
func (s *Server) timeline(r *http.Request, id string) (timelinePage, error) {
	var tp timelinePage
	before := 0
	if b := r.URL.Query().Get("before"); b != "" {
		n, err := strconv.Atoi(b)
		if err != nil || n < 0 {
			return tp, fmt.Errorf("%w: before=%q is not a position in the journal", api.ErrInvalid, b)
		}
		before = n
	}
	page, err := s.cfg.Service.Events(r.Context(), id, api.EventsQuery{Before: before, Limit: s.cfg.PageSize})
	if err != nil {
		return tp, err
	}
	tp.Total, tp.Start, tp.End = page.Total, page.Start, page.Start+len(page.Events)
	for i, raw := range page.Events {
		e, err := journal.ParseLine(raw)
		if err != nil {
			return tp, fmt.Errorf("ui: journal line %d: %w", page.Start+i+1, err)
		}
		tp.Items = append(tp.Items, itemOf(page.Start+i, e))
	}
	base := "/agents/" + id
	if tp.Start > 0 {
		tp.Older = base + "?before=" + strconv.Itoa(tp.Start)
	}
	switch {
	case tp.End >= tp.Total:
		tp.Live = base + "/live?from=" + strconv.Itoa(tp.Total)
	case tp.End+s.cfg.PageSize >= tp.Total:
		tp.Newer = base
	default:
		tp.Newer = base + "?before=" + strconv.Itoa(tp.End+s.cfg.PageSize)
	}
	return tp, nil
}

// workspace shows the agent's recorded workspace as a file tree.
func (s *Server) workspace(w http.ResponseWriter, r *http.Request, x session) {
	id := r.PathValue("id")
	v := view{Title: "Workspace of " + id, CSRF: x.csrf}
	ws, err := s.cfg.Service.Workspace(r.Context(), id)
	if err != nil {
		v.Error = err.Error()
		s.pages.render(w, statusOf(err), "refused", v)
		return
	}
	v.Workspace = &ws
	s.pages.render(w, http.StatusOK, "workspace", v)
}
