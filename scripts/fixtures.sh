#!/usr/bin/env bash
# Builds release RELEASE from its commit in git history and uses that binary
# to write the golden fixtures of testdata/fixtures/RELEASE/: capsule folders,
# .capsule.tar, .capsule.tar.zst and signed archives, and, for every one of
# them, what that release's own CLI read back (verify, inspect, env show, log,
# render for every provider, checkout, import), in expect/. The fixture test
# (cmd/capsule/fixtures_test.go) reads every fixture through today's read
# paths and compares. Fixtures are never written by hand: run this instead.
#
#   scripts/fixtures.sh 0.1.0 c453eb8
#   scripts/fixtures.sh 0.2.0 --tree     # the release being made, from this tree
#
# With --tree the binary is built from the work tree (the release whose
# fixtures are added as it is cut; its schema.Release must be RELEASE), and
# the commit recorded is HEAD, marked "+tree" when the tree has changes.
# Needs go, git, tar, ssh-keygen, sha256sum. A commit's build is cached in
# ${CAPSULE_FIXTURE_CACHE:-$HOME/.cache/capsule-fixtures}/<commit>/capsule.
set -euo pipefail

release=${1:?usage: scripts/fixtures.sh RELEASE COMMIT|--tree}
commit=${2:?usage: scripts/fixtures.sh RELEASE COMMIT|--tree}
repo=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
if [ "$commit" = --tree ]; then
	full=$(git -C "$repo" rev-parse HEAD)
	[ -z "$(git -C "$repo" status --porcelain -- ':!testdata/fixtures')" ] || full="$full+tree"
	cache=$tmp/build
else
	full=$(git -C "$repo" rev-parse --verify "$commit^{commit}")
	cache=${CAPSULE_FIXTURE_CACHE:-$HOME/.cache/capsule-fixtures}/$full
fi
out=$repo/testdata/fixtures/$release

# 1. The release's binary, built from its commit alone (git archive: no work
# tree, no local changes), or with --tree from the work tree.
if [ "$commit" = --tree ]; then
	mkdir -p "$cache"
	(cd "$repo" && go build -trimpath -ldflags "-X main.commit=${full:0:7}" -o "$cache/capsule" ./cmd/capsule)
	"$cache/capsule" version --json | grep -q "\"release\": \"$release\"" || { echo "fixtures: this tree is not release $release" >&2; exit 1; }
elif [ ! -x "$cache/capsule" ]; then
	mkdir -p "$tmp/src" "$cache"
	git -C "$repo" archive "$full" | tar -x -C "$tmp/src"
	(cd "$tmp/src" && go build -trimpath -ldflags "-X main.commit=${full:0:7}" -o "$cache/capsule.new" ./cmd/capsule)
	mv "$cache/capsule.new" "$cache/capsule"
fi
old=$cache/capsule
export CAPSULE_CONFIG_DIR=$tmp/config
cap() { "$old" "$@"; }

rm -rf "$out"
mkdir -p "$out/capsules" "$out/archives" "$out/keys" "$out/expect"

# 2. A small workspace: a file, an executable, a link, an empty directory, an
# ignored file and the ignore file.
ws=$tmp/ws
mkdir -p "$ws/bin" "$ws/docs" "$ws/empty"
printf '# fixture\n' >"$ws/README.md"
printf '#!/bin/sh\necho run\n' >"$ws/bin/run.sh"
chmod 0755 "$ws/bin/run.sh"
ln -s ../README.md "$ws/docs/readme-link"
printf '*.log\n' >"$ws/.capsuleignore"
printf 'ignored\n' >"$ws/build.log"

# The spec in the version the release writes: 0.1.0 knows version 1 only;
# from 0.2.0 (environment version 2) MCP servers with effect classes and
# approval rules, built-in rules and allowed hosts.
if "$old" version --json 2>/dev/null | grep -q '"environment": 2'; then
	cat >"$tmp/spec.json" <<'SPEC'
{
  "version": 2,
  "workdir": "",
  "env": {"LANG": "C.UTF-8"},
  "secrets": ["GITHUB_TOKEN"],
  "mcp_servers": [{"name": "github", "transport": "stdio", "command": "github-mcp-server", "args": ["stdio"],
                   "secrets": ["GITHUB_TOKEN"], "effect": "external", "approval": "required",
                   "tools": {"get_issue": {"effect": "read", "approval": "never"}}}],
  "tools": {"run": {"approval": "required"}},
  "tool_mappings": {},
  "sandbox": {"mode": "required", "network": "hosts", "hosts": ["api.github.com:443"], "packages": ["git"], "cpus": 1, "memory_mb": 512},
  "lifecycle": {"ephemeral": false}
}
SPEC
else
	cat >"$tmp/spec.json" <<'SPEC'
{
  "version": 1,
  "workdir": "",
  "env": {"LANG": "C.UTF-8"},
  "secrets": ["GITHUB_TOKEN"],
  "tools": [{"name": "github", "command": "github-mcp-server", "args": ["stdio"], "secrets": ["GITHUB_TOKEN"]}],
  "sandbox": {"network": "loopback", "packages": ["git"], "cpus": 1, "memory_mb": 512}
}
SPEC
fi

t=0
ev() { # ev DIR KIND BODY [extra flags]
	local dir=$1 kind=$2 body=$3
	shift 3
	t=$((t + 1))
	cap log append "$dir" --kind "$kind" --body "$body" --machine m0fixture \
		--time "2026-11-29T12:00:$(printf %02d $t)Z" "$@" >/dev/null
}
oa='{"provider":"openai","api":"openai-responses","model":"gpt-4.1"}'
an='{"provider":"anthropic","api":"anthropic","model":"claude-sonnet-4-6"}'

# 3. Capsules. empty: a new capsule. conversation: a workspace, a spec and a
# conversation across two models, with reasoning, a tool call and its result,
# usage and an event of a kind the release does not know. dangling: a
# journal that ends in a tool call without a result.
cap init "$out/capsules/empty" --id 01JE0000000000000000000001 --name fixture-empty >/dev/null

c=$out/capsules/conversation
cap init "$c" --id 01JE0000000000000000000002 --name fixture-conversation >/dev/null
cap snapshot "$c" --from "$ws" -q >/dev/null
cap env load "$c" "$tmp/spec.json" >/dev/null
ev "$c" instruction '{"role":"system","text":"You are a careful assistant."}'
ev "$c" model_change '{"provider":"anthropic","api":"anthropic","model":"claude-sonnet-4-6"}'
ev "$c" user '{"text":"What is in README.md?"}'
ev "$c" reasoning '{"producer":'"$an"',"step":"s1","text":"I should read the file.","signature":"c2lnLWFudGhyb3BpYw=="}'
ev "$c" tool_call '{"call_id":"toolu_01","name":"read_file","arguments":{"path":"README.md"},"producer":'"$an"',"step":"s1"}'
ev "$c" tool_result '{"call_id":"toolu_01","name":"read_file","content":"# fixture\n"}'
ev "$c" assistant '{"text":"It is a heading: fixture.","producer":'"$an"',"step":"s2","stop_reason":"end_turn"}'
ev "$c" usage '{"producer":'"$an"',"input_tokens":120,"output_tokens":30,"estimated_tokens":115}'
ev "$c" model_change '{"provider":"openai","api":"openai-responses","model":"gpt-4.1"}'
ev "$c" user '{"text":"And bin/run.sh?"}'
ev "$c" x-fixture-note '{"note":"a kind 0.1.0 does not know"}' --allow-unknown-kind
ev "$c" tool_call '{"call_id":"call_02","name":"read_file","arguments":{"path":"bin/run.sh"},"producer":'"$oa"',"step":"s3","item_id":"fc_02"}'
ev "$c" tool_result '{"call_id":"call_02","name":"read_file","content":"#!/bin/sh\necho run\n"}'
ev "$c" assistant '{"text":"A shell script that prints run.","producer":'"$oa"',"step":"s4","item_id":"msg_04"}'

d=$out/capsules/dangling
cap init "$d" --id 01JE0000000000000000000003 --name fixture-dangling >/dev/null
ev "$d" model_change '{"provider":"openai","api":"openai-chat","model":"gpt-4.1"}'
ev "$d" user '{"text":"List the files."}'
ev "$d" tool_call '{"call_id":"call_1","name":"list_files","arguments":{},"producer":{"provider":"openai","api":"openai-chat","model":"gpt-4.1"}}'

# 4. Archives: tar, tar.zst, and a signed tar with the key's allowed_signers.
ssh-keygen -q -t ed25519 -N '' -C fixture@capsule -f "$tmp/key"
cp "$tmp/key.pub" "$out/keys/fixture.pub"
printf 'fixture@capsule namespaces="capsule" %s\n' "$(cut -d' ' -f1,2 "$tmp/key.pub")" >"$out/keys/allowed_signers"
cap export "$c" -o "$out/archives/conversation.capsule.tar" -q >/dev/null
cap export "$c" -o "$out/archives/conversation.capsule.tar.zst" -q >/dev/null
cap export "$c" -o "$out/archives/conversation-signed.capsule.tar" --sign "$tmp/key" -q >/dev/null
cap export "$out/capsules/empty" -o "$out/archives/empty.capsule.tar.zst" -q >/dev/null

# 5. What this release reads back. A path in an output is written as the
# fixture's path relative to the fixture folder.
rel() { sed "s#$out/##g; s#$tmp/##g"; }
tree() { # tree DIR: one line per entry, sorted: type, exec bit, path, digest or target
	(cd "$1" && find . -mindepth 1 | LC_ALL=C sort | while read -r p; do
		if [ -L "$p" ]; then echo "link $p -> $(readlink "$p")"
		elif [ -d "$p" ]; then echo "dir $p"
		elif [ -x "$p" ]; then echo "exec $p $(sha256sum <"$p" | cut -d' ' -f1)"
		else echo "file $p $(sha256sum <"$p" | cut -d' ' -f1)"; fi
	done)
}
# rec FILE CMD...: stdout into FILE; when CMD fails, its exit code and
# stderr into FILE.err instead (a refusal is an expectation too).
rec() {
	local f=$1 code=0
	shift
	"$@" >"$f" 2>"$tmp/stderr" || code=$?
	if [ "$code" != 0 ]; then
		rm -f "$f"
		{ echo "exit $code"; rel <"$tmp/stderr"; } >"$f.err"
	fi
}
providers="openai-chat:gpt-4.1 openai-responses:gpt-4.1 anthropic:claude-sonnet-4-6 gemini:gemini-2.5-pro ollama:qwen3"
reads=()
for f in empty conversation dangling; do
	e=$out/expect/$f
	mkdir -p "$e"
	cap verify "$out/capsules/$f" --json | rel >"$e/verify.json"
	cap inspect "$out/capsules/$f" --json | rel >"$e/inspect.json"
	cap env show "$out/capsules/$f" --json >"$e/env.json"
	cap log "$out/capsules/$f" --json >"$e/log.jsonl"
	cap log verify "$out/capsules/$f" --json | rel >"$e/log-verify.json"
	for p in $providers; do
		rec "$e/render-${p%%:*}.json" cap render "$out/capsules/$f" --provider "${p%%:*}" --model "${p#*:}" --json
	done
	cap checkout "$out/capsules/$f" --to "$tmp/co-$f" -q >/dev/null
	tree "$tmp/co-$f" >"$e/checkout.txt"
	tree "$out/capsules/$f" >"$e/folder.txt"
	reads+=("\"$f\"")
done
for a in conversation.capsule.tar conversation.capsule.tar.zst conversation-signed.capsule.tar empty.capsule.tar.zst; do
	e=$out/expect/$a
	mkdir -p "$e"
	cap verify "$out/archives/$a" --json | rel >"$e/verify.json"
	cap import "$out/archives/$a" -o "$tmp/imp-$a" -q >/dev/null
	tree "$tmp/imp-$a" >"$e/import.txt"
done
cap verify "$out/archives/conversation-signed.capsule.tar" --json \
	--allowed-signers "$out/keys/allowed_signers" --identity fixture@capsule | rel >"$out/expect/conversation-signed.capsule.tar/verify-trusted.json"

# 6. Node data folders: two nodes of this release, A and B, that trust each
# other. On A, "running" is an agent left running when A stopped; "moved" was
# moved to B (A keeps the source record and the retired copy, B holds it);
# from 0.3.0, "waiting" is an LLM agent waiting for the approval of a call
# (its status then is in expect/nodes/waiting-status.json).
# Each node's agent list and each agent's status, as the release reported them
# before it stopped, are in expect/nodes/.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
nodes=$tmp/nodes
mkdir -p "$nodes" "$out/expect/nodes"
pa=$(free_port)
pb=$(free_port)
ida=$(cap node id --data "$nodes/a")
idb=$(cap node id --data "$nodes/b")
cap node peer add "$idb" "127.0.0.1:$pb" --data "$nodes/a" >/dev/null
cap node peer add "$ida" "127.0.0.1:$pa" --data "$nodes/b" >/dev/null
# From 0.3.0 (a CLI whose agent create takes --spec), A also hosts an LLM
# agent waiting for an approval, on the embedded model endpoint (a
# simulator: capsule model serve).
model_args=()
ms=
if "$old" agent create --help 2>/dev/null | grep -q -- '--spec'; then
	pm=$(free_port)
	"$old" model serve --listen "127.0.0.1:$pm" >"$tmp/model.log" 2>&1 &
	ms=$!
	model_args=(--model-endpoint "http://127.0.0.1:$pm")
fi
"$old" node --data "$nodes/a" --listen "127.0.0.1:$pa" --step-interval 1s "${model_args[@]}" 2>"$tmp/node-a.log" &
na=$!
"$old" node --data "$nodes/b" --listen "127.0.0.1:$pb" --step-interval 1s 2>"$tmp/node-b.log" &
nb=$!
stop_nodes() {
	kill -TERM "$na" "$nb" $ms 2>/dev/null || true
	wait "$na" "$nb" $ms 2>/dev/null || true
}
trap 'stop_nodes; chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
for d in a b; do
	for _ in $(seq 100); do [ -S "$nodes/$d/node.sock" ] && break; sleep 0.1; done
done
agent_id() { sed -n 's/.*"id": *"\([0-9A-Z]\{26\}\)".*/\1/p' | head -1; }
running=$(cap agent create --name running --data "$nodes/a" --json | agent_id)
moved=$(cap agent create --name moved --data "$nodes/a" --json | agent_id)
waiting=
if [ -n "$ms" ]; then
	cat >"$tmp/waiting-spec.json" <<'SPEC'
{"version": 2, "workdir": "", "env": {}, "secrets": [], "mcp_servers": [],
 "tools": {"write_file": {"approval": "required"}}, "tool_mappings": {},
 "sandbox": {"mode": "required", "network": "none", "hosts": [], "packages": [], "cpus": 0,
             "memory_mb": 0, "wall_seconds": 0, "output_bytes": 0, "processes": 0, "disk_mb": 0},
 "lifecycle": {"ephemeral": false, "discard_max_tokens": 0}}
SPEC
	waiting=$(cap agent create --name waiting --from "$ws" --spec "$tmp/waiting-spec.json" \
		--provider openai --api chat --model capsule-sim/planner \
		--task "Please write_file path=notes.txt content=approved" --data "$nodes/a" --json | agent_id)
	for _ in $(seq 100); do
		cap agent status "$waiting" --data "$nodes/a" --json >"$out/expect/nodes/waiting-status.json"
		grep -q '"call_id"' "$out/expect/nodes/waiting-status.json" && break
		sleep 0.1
	done
	grep -q '"call_id"' "$out/expect/nodes/waiting-status.json" || { echo "fixtures: the agent never waited for its approval" >&2; exit 1; }
fi
sleep 1
cap move "$moved" --to "$idb" --data "$nodes/a" --json | rel >"$out/expect/nodes/move.json"
sleep 0.5
cap agent stop "$moved" --data "$nodes/b" >/dev/null
cap agent list --data "$nodes/a" --json >"$out/expect/nodes/a-list.json"
cap agent list --data "$nodes/b" --json >"$out/expect/nodes/b-list.json"

# An agent mid-move left by a crash: B is killed (SIGKILL) while a move of
# "crashed" from A to it runs, at a later point on each try until B's folder
# holds the agent; A's view of the move afterwards is in expect/nodes/.
start_b() {
	"$old" node --data "$nodes/b" --listen "127.0.0.1:$pb" --step-interval 1s 2>>"$tmp/node-b.log" &
	nb=$!
	for _ in $(seq 100); do [ -S "$nodes/b/node.sock" ] && cap agent list --data "$nodes/b" >/dev/null 2>&1 && break; sleep 0.1; done
}
crashed=
for delay in 0.05 0.1 0.15 0.2 0.3 0.4 0.6; do
	id=$(cap agent create --name crashed --data "$nodes/a" --json | agent_id)
	sleep 0.3
	cap move "$id" --to "$idb" --data "$nodes/a" --json >"$tmp/crash-move.json" 2>&1 &
	mv_pid=$!
	sleep "$delay"
	kill -KILL "$nb"
	wait "$nb" 2>/dev/null || true
	wait "$mv_pid" 2>/dev/null || true
	if [ -d "$nodes/b/agents/$id" ]; then
		crashed=$id
		break
	fi
	cap agent stop "$id" --data "$nodes/a" >/dev/null 2>&1 || true
	start_b
done
[ -n "$crashed" ] || { echo "fixtures: no crash left a move half done" >&2; exit 1; }
cap move status "$crashed" --data "$nodes/a" --json >"$out/expect/nodes/crash-move-status.json"
cap agent list --data "$nodes/a" --json >"$out/expect/nodes/a-list.json"
stop_nodes
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
for d in a b; do
	rm -f "$nodes/$d/node.sock"
	for c in "$nodes/$d"/agents/*/capsule; do
		[ -d "$c" ] || continue
		a=$(basename "$(dirname "$c")")
		mkdir -p "$out/expect/nodes/$d/$a"
		cap verify "$c" --json | sed "s#$nodes/$d/#nodes/$d/#g" >"$out/expect/nodes/$d/$a/verify.json"
		cap log verify "$c" --json | sed "s#$nodes/$d/#nodes/$d/#g" >"$out/expect/nodes/$d/$a/log-verify.json"
		cap log "$c" --json >"$out/expect/nodes/$d/$a/log.jsonl"
	done
	cp -a "$nodes/$d" "$out/nodes-$d"
	tree "$out/nodes-$d" >"$out/expect/nodes/$d-folder.txt"
done
mkdir -p "$out/nodes"
mv "$out/nodes-a" "$out/nodes/a"
mv "$out/nodes-b" "$out/nodes/b"
printf '{"a": "%s", "b": "%s", "running": "%s", "moved": "%s", "crashed": "%s", "waiting": "%s"}\n' "$ida" "$idb" "$running" "$moved" "$crashed" "$waiting" >"$out/expect/nodes/ids.json"

# 7. The record of how the fixtures were made.
cat >"$out/expectations.json" <<JSON
{
  "release": "$release",
  "commit": "$full",
  "made_by": "scripts/fixtures.sh $release $commit",
  "go": "$(go env GOVERSION)",
  "version": "$("$old" --version)",
  "capsules": [$(IFS=,; echo "${reads[*]}")],
  "archives": ["conversation.capsule.tar", "conversation.capsule.tar.zst", "conversation-signed.capsule.tar", "empty.capsule.tar.zst"],
  "signed": {"archive": "conversation-signed.capsule.tar", "allowed_signers": "keys/allowed_signers", "identity": "fixture@capsule"},
  "nodes": ["a", "b"],
  "providers": [$(for p in $providers; do printf '{"api":"%s","model":"%s"},' "${p%%:*}" "${p#*:}"; done | sed 's/,$//')]
}
JSON
echo "fixtures of $release ($full) in $out"
du -sh "$out"
