package compat

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/agentcapsule/capsule/schema"
)

// A Grant is one thing a spec lets an agent do (FORMAT §11.9.2):
//
//	network:*            reach any host      network:loopback  reach loopback
//	network:HOST:PORT    reach one host       unsandboxed       run tools outside the sandbox
//	server:NAME          start or reach MCP server NAME
//	secret:SERVER/NAME   hand secret NAME to SERVER ("" for the agent itself)
//	unapproved:TOOL      call TOOL without approval (TOOL may be "SERVER.*")
//	effect:TOOL=CLASS    treat TOOL as read or workspace rather than external
//	route:FROM>TO        answer a journal's calls of FROM with TO (a mapping)
//	discard              discard the agent instead of migrating it
//
// Anything a version of the spec cannot express, it does not grant: a
// version-1 spec grants no call without approval, no effect class below
// external, no mapping and no discard.
type Grant struct {
	Kind   string `json:"kind"`
	Target string `json:"target,omitempty"`
}

// String gives the grant as KIND:TARGET, or KIND alone.
func (g Grant) String() string {
	if g.Target == "" {
		return g.Kind
	}
	return g.Kind + ":" + g.Target
}

// Authority is the set of grants of a spec, sorted.
type Authority []Grant

// AuthorityOf computes the authority of spec.json bytes of version 1 or 2
// under release r, whose built-in tools count with the spec's rules for them.
func AuthorityOf(b []byte, r Release) (Authority, error) {
	var head struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("compat: authority: %w", err)
	}
	set := map[Grant]bool{}
	switch head.Version {
	case 1:
		var s specV1
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("compat: authority: %w", err)
		}
		if _, err := ParseSpec(b); err != nil {
			return nil, err
		}
		authorityV1(&s, set)
		builtinAuthority(nil, r, set)
	case 2:
		s, err := ParseSpec(b)
		if err != nil {
			return nil, err
		}
		authorityV2(s, set)
		builtinAuthority(s.Tools, r, set)
	default:
		return nil, fmt.Errorf("compat: authority: spec version %d", head.Version)
	}
	out := make(Authority, 0, len(set))
	for g := range set {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// specV1 is what authority reads of a version-1 spec, frozen here: the
// version-1 file's own words, never a reader's migrated view of them.
type specV1 struct {
	Secrets []string `json:"secrets"`
	Tools   []struct {
		Name    string   `json:"name"`
		Secrets []string `json:"secrets"`
	} `json:"tools"`
	Sandbox struct {
		Network string `json:"network"`
	} `json:"sandbox"`
}

func authorityV1(s *specV1, set map[Grant]bool) {
	switch s.Sandbox.Network {
	case "loopback":
		set[Grant{"network", "loopback"}] = true
	case "full":
		set[Grant{"network", "*"}] = true
	}
	for _, n := range s.Secrets {
		set[Grant{"secret", "/" + n}] = true
	}
	for _, t := range s.Tools {
		set[Grant{"server", t.Name}] = true
		for _, n := range t.Secrets {
			set[Grant{"secret", t.Name + "/" + n}] = true
		}
	}
}

func authorityV2(s *Spec, set map[Grant]bool) {
	if s.Sandbox.Network == "hosts" {
		for _, h := range s.Sandbox.Hosts {
			set[Grant{"network", h}] = true
		}
	}
	if s.Sandbox.Mode == "none" {
		set[Grant{"unsandboxed", ""}] = true
	}
	for _, n := range s.Secrets {
		set[Grant{"secret", "/" + n}] = true
	}
	for _, srv := range s.MCPServers {
		set[Grant{"server", srv.Name}] = true
		for _, n := range srv.Secrets {
			set[Grant{"secret", srv.Name + "/" + n}] = true
		}
		ruleAuthority(srv.Name+".*", Rule{Effect: srv.Effect, Approval: srv.Approval}, set)
		for t, rule := range srv.Tools {
			if rule.Effect == "" {
				rule.Effect = srv.Effect
			}
			ruleAuthority(srv.Name+"."+t, rule, set)
		}
	}
	for from, to := range s.Mappings {
		set[Grant{"route", from + ">" + to}] = true
	}
	if s.Lifecycle.Ephemeral {
		set[Grant{"discard", ""}] = true
	}
}

// builtinAuthority adds the release's built-in tools under the spec's rules
// for them (nil for a version-1 spec, which has none).
func builtinAuthority(rules map[string]Rule, r Release, set map[Grant]bool) {
	for name, b := range r.Tools {
		rule := Rule{Effect: b.Effect, Approval: b.Approval}
		if sr, ok := rules[name]; ok && sr.Approval != "" {
			rule.Approval = sr.Approval
		}
		ruleAuthority(name, rule, set)
	}
}

func ruleAuthority(tool string, rule Rule, set map[Grant]bool) {
	if rule.Approval == schema.ApprovalNever {
		set[Grant{"unapproved", tool}] = true
	}
	if rule.Effect == schema.EffectRead || rule.Effect == schema.EffectWorkspace {
		set[Grant{"effect", tool + "=" + rule.Effect}] = true
	}
}

// Widened returns the grants of after that no grant of before covers: what
// a migration from before to after would give an agent that it did not
// have. It is empty when after is within before.
func Widened(before, after Authority) []Grant {
	var out []Grant
	for _, g := range after {
		if !before.covers(g) {
			out = append(out, g)
		}
	}
	return out
}

func (a Authority) covers(g Grant) bool {
	for _, b := range a {
		if covers(b, g) {
			return true
		}
	}
	return false
}

// covers reports whether grant a includes grant b.
func covers(a, b Grant) bool {
	if a.Kind != b.Kind {
		return false
	}
	if a.Target == b.Target {
		return true
	}
	switch a.Kind {
	case "network":
		return a.Target == "*" || a.Target == "loopback" && isLoopback(b.Target)
	case "unapproved":
		return toolCovers(a.Target, b.Target)
	case "effect":
		at, ac, _ := strings.Cut(a.Target, "=")
		bt, bc, _ := strings.Cut(b.Target, "=")
		return toolCovers(at, bt) && effectRank[ac] >= effectRank[bc]
	}
	return false
}

// effectRank orders effect classes by how much they let a tool do unchecked:
// a read tool may be repeated freely, a workspace tool's effect is captured,
// an external tool is journaled before it runs.
var effectRank = map[string]int{schema.EffectExternal: 0, schema.EffectWorkspace: 1, schema.EffectRead: 2}

// toolCovers reports whether tool pattern a ("server.*" or a name) includes b.
func toolCovers(a, b string) bool {
	if a == b {
		return true
	}
	srv, ok := strings.CutSuffix(a, ".*")
	return ok && strings.HasPrefix(b, srv+".")
}

func isLoopback(hostPort string) bool {
	i := strings.LastIndexByte(hostPort, ':')
	if i < 0 {
		return false
	}
	h := hostPort[:i]
	return h == "localhost" || h == "[::1]" || strings.HasPrefix(h, "127.")
}
