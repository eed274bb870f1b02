package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentcapsule/capsule/authority"
	"github.com/agentcapsule/capsule/transfer"
)

// Authority is where fleet mode's holder authority enters the node
// (PROTOCOL §12, a draft). The node asks it at two points of a move; the
// default, LocalAuthority, is the node's own records alone, today's
// behaviour: every activate is allowed and the ambiguous moment is settled
// by asking the target (resolve, §6 R6).
type Authority interface {
	// Activate is asked by target on activate(epoch) of its prepared
	// move of agent from source, before it persists HOLDER(epoch) (F5).
	// An error refuses the activate: nothing is persisted and the request
	// fails, so the source settles the move.
	Activate(ctx context.Context, agent, source, target string, epoch uint64) error
	// Settle is asked by source past the point of no return whose
	// activate(epoch) to target went unanswered, before each resolve (F6).
	// With ok false the node sends resolve to the target; otherwise the
	// outcome is final and no resolve is sent.
	Settle(ctx context.Context, agent, source, target string, epoch uint64) (o authority.Outcome, ok bool, err error)
}

// LocalAuthority is the default Authority: the node's records are the only
// authority.
type LocalAuthority struct{}

// Activate allows every activate: the target's records decide (§6 R4).
func (LocalAuthority) Activate(context.Context, string, string, string, uint64) error { return nil }

// Settle leaves the ambiguous moment to resolve.
func (LocalAuthority) Settle(context.Context, string, string, string, uint64) (authority.Outcome, bool, error) {
	return "", false, nil
}

// FleetAuthority is the Authority of fleet mode (PROTOCOL §12): the agents'
// keys in A (authority/etcd; authority.Mem in tests). The node does not
// select it yet (no flag), and F4, F7's start check and F8 are not
// implemented, so it is for tests and the next step only.
type FleetAuthority struct {
	A authority.Authority
}

// Activate commits the activation on the key: source below epoch →
// (target, epoch). A reply lost is settled by reading the key.
func (f FleetAuthority) Activate(ctx context.Context, agent, source, target string, epoch uint64) error {
	_, err := authority.ActivateAt(ctx, f.A, agent, source, target, epoch)
	if !errors.Is(err, authority.ErrUnknownOutcome) {
		return err
	}
	cur, gerr := f.A.Get(ctx, agent)
	if gerr == nil && cur.Node == target && cur.Epoch == epoch {
		return nil // it committed
	}
	return err
}

// Settle reads the key and, unless the target holds epoch, burns it.
func (f FleetAuthority) Settle(ctx context.Context, agent, source, target string, epoch uint64) (authority.Outcome, bool, error) {
	o, _, err := authority.SettleAt(ctx, f.A, agent, source, target, epoch)
	return o, err == nil, err
}

// authorizeActivate asks the authority about m when it is the activate of
// the prepared pending move (anything else the Target refuses on its own,
// R4). Caller holds a.mu.
func (a *tenant) authorizeActivate(m transfer.Message) error {
	p := a.holder.Pending()
	if m.Type != transfer.MsgActivate || p == nil || p.Move != m.Move || p.Epoch != m.Epoch || p.Phase != transfer.PhasePrepared {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.n.cfg.RequestTimeout)
	defer cancel()
	if err := a.n.cfg.Authority.Activate(ctx, a.id, m.From, string(a.n.ID()), m.Epoch); err != nil {
		return fmt.Errorf("node: activate %s at epoch %d: authority: %w", a.id, m.Epoch, err)
	}
	return nil
}

// settleByAuthority asks the authority to settle the resolve m; when it
// does, it returns the reply the target would have given, so the Source
// machine steps as it does today.
func (n *Node) settleByAuthority(m transfer.Message) ([]transfer.Input, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.RequestTimeout)
	defer cancel()
	o, ok, err := n.cfg.Authority.Settle(ctx, m.Agent, m.From, m.To, m.Epoch)
	if err != nil {
		n.log.Warn("authority could not settle the move", "agent", m.Agent, "move", m.Move, "epoch", m.Epoch, "err", err)
		return []transfer.Input{{Kind: transfer.InSendFailed, Problems: []string{"authority: " + err.Error()}}}, true
	}
	if !ok {
		return nil, false
	}
	res := map[authority.Outcome]transfer.Resolution{
		authority.Committed:  transfer.ResolvedCommitted,
		authority.Burned:     transfer.ResolvedAborted,
		authority.Superseded: transfer.ResolvedUnknown,
	}[o]
	if res == "" {
		res = transfer.ResolvedUnknown // an outcome this release does not know: stay frozen (R9)
	}
	if o == authority.Burned {
		n.abortBurned(m)
	}
	reply := transfer.Message{Type: transfer.MsgResolved, Agent: m.Agent, Move: m.Move, Epoch: m.Epoch,
		From: m.To, To: m.From, Re: m.Type, Resolution: res}
	return []transfer.Input{transfer.Receive(reply)}, true
}

// abortBurned asks the target once to abort the move whose epoch the
// authority burned, so its staging goes now rather than when a newer offer
// supersedes it (R8). The Source machine sends no abort after a resolve
// that aborted: in the default mode the target itself aborted.
func (n *Node) abortBurned(m transfer.Message) {
	abort := transfer.Message{Type: transfer.MsgAbort, Agent: m.Agent, Move: m.Move, Epoch: m.Epoch, From: m.From, To: m.To}
	if _, err := n.call(ID(m.To), abort); err != nil {
		n.log.Info("abort after a burn not delivered; the target discards the staging at a newer offer", "agent", m.Agent, "move", m.Move, "err", err)
	}
}
