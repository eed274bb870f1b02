package authority

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// MemDirectory is the in-memory twin of the directory: registrations,
// presence, admissions and cordons in maps, for tests and a single node.
// Presence has no clock: it ends when the registration is closed or the
// test calls Expire, which stands for a lease that lapsed.
type MemDirectory struct {
	mu       sync.Mutex
	infos    map[string]NodeInfo
	alive    map[string]*memRegistration
	admitted map[string]bool
	cordoned map[string]bool
	watchers map[chan []Node]struct{}
}

var _ Directory = (*MemDirectory)(nil)

// NewMemDirectory returns an empty MemDirectory.
func NewMemDirectory() *MemDirectory {
	return &MemDirectory{infos: map[string]NodeInfo{}, alive: map[string]*memRegistration{},
		admitted: map[string]bool{}, cordoned: map[string]bool{}, watchers: map[chan []Node]struct{}{}}
}

type memRegistration struct {
	d    *MemDirectory
	id   string
	lost chan struct{}
	once sync.Once
}

// Lost is closed when the presence ends.
func (r *memRegistration) Lost() <-chan struct{} { return r.lost }

// Close ends the presence at once.
func (r *memRegistration) Close() error {
	r.d.end(r)
	return nil
}

// Register records info and makes the node present until its registration
// is closed or expired.
func (d *MemDirectory) Register(ctx context.Context, info NodeInfo) (Registration, error) {
	if err := checkNodeID(info.ID); err != nil {
		return nil, fmt.Errorf("authority: register: %w", err)
	}
	d.mu.Lock()
	old := d.alive[info.ID]
	r := &memRegistration{d: d, id: info.ID, lost: make(chan struct{})}
	d.infos[info.ID], d.alive[info.ID] = info, r
	d.mu.Unlock()
	if old != nil {
		old.once.Do(func() { close(old.lost) })
	}
	d.changed()
	return r, nil
}

// Expire ends the presence of node id as a lapsed lease does: the node
// stays listed, unreachable, and its registration's Lost is closed.
func (d *MemDirectory) Expire(id string) {
	d.mu.Lock()
	r := d.alive[id]
	d.mu.Unlock()
	if r != nil {
		d.end(r)
	}
}

func (d *MemDirectory) end(r *memRegistration) {
	d.mu.Lock()
	mine := d.alive[r.id] == r
	if mine {
		delete(d.alive, r.id)
	}
	d.mu.Unlock()
	r.once.Do(func() { close(r.lost) })
	if mine {
		d.changed()
	}
}

// List returns every node ever registered or named by an operator.
func (d *MemDirectory) List(ctx context.Context) ([]Node, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.listLocked(), nil
}

func (d *MemDirectory) listLocked() []Node {
	infos := make([]NodeInfo, 0, len(d.infos))
	for _, in := range d.infos {
		infos = append(infos, in)
	}
	alive := map[string]bool{}
	for id := range d.alive {
		alive[id] = true
	}
	return Nodes(infos, alive, d.admitted, d.cordoned)
}

// Watch sends the list now and after every change, until ctx ends.
func (d *MemDirectory) Watch(ctx context.Context) (<-chan []Node, error) {
	ch := make(chan []Node, 64)
	d.mu.Lock()
	ch <- d.listLocked()
	d.watchers[ch] = struct{}{}
	d.mu.Unlock()
	go func() {
		<-ctx.Done()
		d.mu.Lock()
		delete(d.watchers, ch)
		close(ch)
		d.mu.Unlock()
	}()
	return ch, nil
}

// changed sends the new list to every watcher; a watcher whose buffer is
// full misses this one and gets the next.
func (d *MemDirectory) changed() {
	d.mu.Lock()
	defer d.mu.Unlock()
	nodes := d.listLocked()
	for ch := range d.watchers {
		select {
		case ch <- nodes:
		default:
		}
	}
}

// Admit records the operator's admission of id.
func (d *MemDirectory) Admit(ctx context.Context, id string) error {
	return d.set(d.admitted, "admit", id, true)
}

// Cordon records the operator's cordon of id.
func (d *MemDirectory) Cordon(ctx context.Context, id string) error {
	return d.set(d.cordoned, "cordon", id, true)
}

// Uncordon removes the operator's cordon of id.
func (d *MemDirectory) Uncordon(ctx context.Context, id string) error {
	return d.set(d.cordoned, "uncordon", id, false)
}

func (d *MemDirectory) set(m map[string]bool, what, id string, on bool) error {
	if err := checkNodeID(id); err != nil {
		return fmt.Errorf("authority: %s: %w", what, err)
	}
	d.mu.Lock()
	if on {
		m[id] = true
	} else {
		delete(m, id)
	}
	d.mu.Unlock()
	d.changed()
	return nil
}

// checkNodeID refuses an ID no key could hold.
func checkNodeID(id string) error {
	if id == "" || strings.Contains(id, "/") {
		return fmt.Errorf("%w: bad node ID %q", ErrInvalid, id)
	}
	return nil
}
