// Package labelset generates the memory index's labelled set: a long
// synthetic agent journal and questions whose answer events are known,
// from a fixed seed. The questions paraphrase their answers (other word
// forms, abbreviations, synonyms) so that lexical overlap alone does not
// answer all of them, and every service appears in many events, so the
// service's name alone does not either. Only memory's tests and the
// generator command import it; its output is committed in
// memory/testdata/labelled.
package labelset

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/agentcapsule/capsule/journal"
)

// Seed is the seed of the committed set.
const Seed = 15

// Question is one labelled query.
type Question struct {
	Query  string `json:"query"`
	Answer string `json:"answer"` // the id of the event that answers it
	Kind   string `json:"kind"`   // the fact template
}

var services = []string{"orion", "basalt", "quill", "tundra", "marlin", "juniper", "cobalt", "falcon", "ember", "glacier",
	"harbor", "ivory", "jasper", "kestrel", "lumen", "mosaic", "nimbus", "onyx", "pebble", "quartz",
	"raven", "sierra", "talon", "umber", "vortex", "willow", "xenon", "yarrow", "zephyr", "aurora",
	"beacon", "cinder", "delta", "fjord", "garnet", "heron", "indigo", "kelp", "lotus", "meadow"}

var people = []string{"Priya", "Tomasz", "Aiko", "Dmitri", "Fatima", "Lucas", "Mei", "Olu", "Sven", "Yara", "Nadia", "Kofi"}
var components = []string{"session", "thumbnail", "query", "token", "template", "geo", "pricing", "avatar"}
var deps = []string{"the ledger API", "the search cluster", "the payments gateway", "the identity provider", "the blob store", "the rate limiter"}
var dbs = []string{"PostgreSQL", "MySQL", "SQLite", "Cassandra", "MongoDB"}
var flags = []string{"lazy-loading", "dark-mode", "batch-writes", "async-export", "strict-csp", "edge-caching", "smart-retry"}
var events = []string{"Black Friday", "product launch", "quarter-end", "newsletter", "conference"}

// fact is one template: how the journal states it and how questions ask.
type fact struct {
	kind  string
	state func(r *rand.Rand, s string) string
	ask   []string // with %s for the service
}

var facts = []fact{
	{"port", func(r *rand.Rand, s string) string {
		return fmt.Sprintf("I configured %s to listen on port %d behind the load balancer.", s, 7000+r.IntN(2000))
	}, []string{"what port is %s listening on", "%s listener port number", "which port did we assign to %s"}},
	{"rollback", func(r *rand.Rand, s string) string {
		return fmt.Sprintf("Rolled back the %s deployment to v%d.%d: the new build leaked memory in the %s cache.", s, 1+r.IntN(4), r.IntN(20), pick(r, components))
	}, []string{"why did we revert the %s deploy", "what went wrong when deploying %s", "reason the %s release was rolled back"}},
	{"owner", func(r *rand.Rand, s string) string {
		return fmt.Sprintf("%s is the owner of %s; page them for incidents.", pick(r, people), s)
	}, []string{"who owns %s", "who should be paged when %s breaks", "%s ownership and incident contact"}},
	{"cert", func(r *rand.Rand, s string) string {
		return fmt.Sprintf("openssl: certificate for %s.internal expires 2027-%02d-%02d", s, 1+r.IntN(12), 1+r.IntN(28))
	}, []string{"when does the %s cert expire", "%s TLS certificate expiry", "expiration date of the %s certs"}},
	{"database", func(r *rand.Rand, s string) string {
		return fmt.Sprintf("%s stores its data in a %s database named %s_main.", s, pick(r, dbs), s)
	}, []string{"which db backs %s", "where does %s keep its data", "%s database engine"}},
	{"timeout", func(r *rand.Rand, s string) string {
		return fmt.Sprintf("ERROR %s: request to %s timed out after %ds", s, pick(r, deps), 5+r.IntN(55))
	}, []string{"which dependency was %s timing out on", "%s timeouts calling what", "what did %s time out waiting for"}},
	{"flag", func(r *rand.Rand, s string) string {
		return fmt.Sprintf("Enabled the %s feature flag in the %s configuration.", pick(r, flags), s)
	}, []string{"which feature flag did we turn on for %s", "%s config flags enabled", "what feature got switched on in %s's config"}},
	{"replicas", func(r *rand.Rand, s string) string {
		return fmt.Sprintf("Scaled %s to %d replicas to handle the %s traffic.", s, 3+r.IntN(30), pick(r, events))
	}, []string{"how many replicas does %s run", "%s replica count after scaling up", "why was %s scaled"}},
}

// noise mentions a service in passing, so its name alone finds many events.
var noise = []string{
	"Can you take a look at %s today?",
	"Checked the %s logs: nothing unusual in the last hour.",
	"Running the %s test suite now.",
	"The %s dashboard looks healthy.",
	"Opened a ticket to clean up old %s branches.",
	"Reviewed the %s pull request and left two comments.",
	"%s: 1423 requests, 0 errors, p99 212ms",
	"Restarted the %s worker pool after the config reload.",
	"Let's revisit the %s deploy pipeline and the port map next week.",
	"Who approved the latest %s change? The owner list is out of date.",
	"Updated the %s runbook with the database failover steps.",
	"The %s certificate rotation job ran; see the report.",
}

// generic shares the facts' words but names no service.
var generic = []string{
	"We should document which ports the staging cluster exposes.",
	"Deployment freeze starts Friday; no rollbacks without approval.",
	"The certificate authority rotates its root next year.",
	"Remember to scale replicas down after the load test.",
	"Feature flags belong in the shared configuration repository.",
	"Timeouts over thirty seconds usually mean a dead dependency.",
	"Every database needs a nightly backup and a restore drill.",
	"Ownership of shared libraries is still unclear.",
	"Memory leaks showed up in three caches last quarter.",
	"Let me summarise what I did so far.",
}

func pick(r *rand.Rand, xs []string) string { return xs[r.IntN(len(xs))] }

// Generate returns the journal and the questions of seed.
func Generate(seed uint64) ([]journal.Event, []Question, error) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := &gen{r: r, w: journal.NewWriter("m0synthetic")}
	type episode struct {
		svc  string
		fact int // -1 for noise, -2 for generic
	}
	var eps []episode
	for _, s := range services {
		for f := range facts {
			eps = append(eps, episode{s, f})
		}
		for range 10 {
			eps = append(eps, episode{s, -1})
		}
	}
	for range 120 {
		eps = append(eps, episode{"", -2})
	}
	r.Shuffle(len(eps), func(i, j int) { eps[i], eps[j] = eps[j], eps[i] })
	var qs []Question
	for _, ep := range eps {
		switch ep.fact {
		case -1:
			g.episode(fmt.Sprintf(pick(r, noise), ep.svc), "")
		case -2:
			g.episode(pick(r, generic), "")
		default:
			f := facts[ep.fact]
			id := g.episode(fmt.Sprintf("Status update on %s, please.", ep.svc), f.state(r, ep.svc))
			qs = append(qs, Question{Query: fmt.Sprintf(pick(r, f.ask), ep.svc), Answer: id, Kind: f.kind})
		}
	}
	if g.err != nil {
		return nil, nil, g.err
	}
	r.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	return g.events, qs[:240], nil
}

type gen struct {
	r      *rand.Rand
	w      *journal.Writer
	events []journal.Event
	calls  int
	err    error
}

var producer = journal.Producer{Provider: "synthetic", API: "chat", Model: "synth-1"}

func (g *gen) add(kind journal.Kind, body any) string {
	e, err := g.w.Next(kind, 1, "", body)
	if err != nil && g.err == nil {
		g.err = err
	}
	g.events = append(g.events, e)
	return e.ID
}

// episode is one step of the agent: a user line, a tool call and its
// result, an assistant reply and the usage. The fact, when there is one,
// is the tool result or the reply; its event id is returned.
func (g *gen) episode(user, fact string) string {
	g.add(journal.KindUser, journal.UserMessage{Text: user})
	g.calls++
	call := fmt.Sprintf("call_%d", g.calls)
	g.add(journal.KindToolCall, journal.ToolCall{CallID: call, Name: "run", Arguments: []byte(`{"cmd":"status"}`), Producer: producer})
	var id string
	asTool := fact != "" && g.r.IntN(2) == 0
	result := "exit 0"
	if asTool {
		result = fact
	}
	rid := g.add(journal.KindToolResult, journal.ToolResult{CallID: call, Name: "run", Content: result})
	reply := "Done; " + strings.ToLower(user[:1]) + user[1:]
	if fact != "" && !asTool {
		reply = fact
	}
	aid := g.add(journal.KindAssistant, journal.AssistantMessage{Text: reply, Producer: producer})
	g.add(journal.KindUsage, journal.Usage{Producer: producer, InputTokens: int64(100 + g.r.IntN(900)), OutputTokens: int64(10 + g.r.IntN(90))})
	id = aid
	if asTool {
		id = rid
	}
	return id
}

// Files returns the committed files of seed: journal.jsonl (one canonical
// line per event) and questions.json (indented, one question per entry).
func Files(seed uint64) (map[string][]byte, error) {
	events, qs, err := Generate(seed)
	if err != nil {
		return nil, err
	}
	var j []byte
	for i := range events {
		j = append(journal.AppendEncode(j, &events[i]), '\n')
	}
	q, err := json.MarshalIndent(qs, "", " ")
	if err != nil {
		return nil, fmt.Errorf("labelset: %w", err)
	}
	return map[string][]byte{"journal.jsonl": j, "questions.json": append(q, '\n')}, nil
}
