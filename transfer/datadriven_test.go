package transfer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestScripts runs the protocol scripts in testdata/scripts/ (docs/PROTOCOL.md,
// "Fault matrix"). Rewrite expectations with -rewrite and review the diff.
//
// Commands:
//
//	init nodes=a,b[,c] holder=a   the agent runs on holder at epoch 1
//	move from=a to=b id=m1 [rounds=N]   start a move (N pre-copy rounds)
//	run                      deliver every message until the network is empty
//	deliver [type=T]         deliver the next message (or the first of type T)
//	drop [type=T]            lose it: its source sees a failed request
//	hold as=X [type=T]       lose it for now (the source sees a failure) ...
//	release name=X           ... and deliver it late
//	dup [type=T]             deliver a copy; the original stays in flight
//	fail node=b what=verify|prepare|persist|freeze [n=1]
//	crash node=b | restart node=b | tick node=a
//	resolve node=a [force=operator]
//	restore-backup node=z epoch=1   z believes it holds the agent (a zombie)
//	state                    print every node (RUNNING marks a runner)
//
// Every command's output ends with VIOLATION lines if two nodes run.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/scripts", func(t *testing.T, path string) {
		var w *world
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "init" && w == nil {
				t.Fatalf("%s: init first", d.Pos)
			}
			switch d.Cmd {
			case "init":
				var nodes, holder string
				d.ScanArgs(t, "nodes", &nodes)
				d.ScanArgs(t, "holder", &holder)
				w = newWorld(strings.Split(nodes, ","), holder)
				w.state()
			case "move":
				var from, to, id string
				rounds := 0
				d.ScanArgs(t, "from", &from)
				d.ScanArgs(t, "to", &to)
				d.ScanArgs(t, "id", &id)
				d.MaybeScanArgs(t, "rounds", &rounds)
				w.startMove(from, to, id, rounds)
			case "run":
				w.run(1000)
			case "deliver", "drop", "hold", "dup":
				w.netCmd(t, d)
			case "release":
				var name string
				d.ScanArgs(t, "name", &name)
				m := w.held[name]
				delete(w.held, name)
				w.logf("(late) %s→%s %s", m.From, m.To, fmtMsg(m))
				w.deliver(m)
			case "fail":
				var node, what string
				n := 1
				d.ScanArgs(t, "node", &node)
				d.ScanArgs(t, "what", &what)
				d.MaybeScanArgs(t, "n", &n)
				w.nodes[node].fail[what] += n
			case "crash", "restart", "tick", "resolve":
				w.nodeCmd(t, d)
			case "restore-backup":
				var node string
				var epoch uint64
				d.ScanArgs(t, "node", &node)
				d.ScanArgs(t, "epoch", &epoch)
				n := w.nodes[node]
				w.logf("%s: restored from an old backup that names it holder at epoch %d (not running yet)", node, epoch)
				w.stepTarget(n, Input{Kind: InAdopt, Epoch: epoch})
			case "state":
				w.state()
			default:
				t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			}
			return w.flush()
		})
	})
}

func (w *world) netCmd(t *testing.T, d *datadriven.TestData) {
	i := 0
	if d.HasArg("type") {
		var typ string
		d.ScanArgs(t, "type", &typ)
		if i = w.find(MsgType(typ)); i < 0 {
			t.Fatalf("%s: no %s in flight", d.Pos, typ)
		}
	}
	if len(w.net) == 0 {
		t.Fatalf("%s: network empty", d.Pos)
	}
	m := w.net[i]
	if d.Cmd != "dup" {
		w.net = append(w.net[:i:i], w.net[i+1:]...)
	}
	switch d.Cmd {
	case "deliver", "dup":
		w.deliver(m)
	case "drop":
		w.logf("(lost) %s→%s %s", m.From, m.To, m.Type)
		w.lost(m)
	case "hold":
		var as string
		d.ScanArgs(t, "as", &as)
		w.held[as] = m
		w.logf("(delayed as %s) %s→%s %s", as, m.From, m.To, m.Type)
		w.lost(m)
	}
}

func (w *world) nodeCmd(t *testing.T, d *datadriven.TestData) {
	var node string
	d.ScanArgs(t, "node", &node)
	n := w.nodes[node]
	switch d.Cmd {
	case "crash":
		w.crash(node)
	case "restart":
		w.restart(node)
	case "tick":
		w.stepSource(n, Input{Kind: InTick})
	case "resolve":
		in := Input{Kind: InResolve}
		if d.HasArg("force") {
			d.ScanArgs(t, "force", &in.Operator)
			in.Kind, in.Epoch = InForce, n.target.MaxEpoch()+1
			w.logf("%s: operator %s forces resolution", node, in.Operator)
		}
		w.stepSource(n, in)
	default:
		panic(fmt.Sprint("unknown ", d.Cmd))
	}
}
