package secret

import (
	"sort"
	"sync"
)

// Mem is an in-memory store, the twin of the others for tests. The zero
// value is empty and ready.
type Mem struct {
	mu sync.Mutex
	m  map[string]string
}

// Kind returns "mem".
func (*Mem) Kind() string { return "mem" }

// Get returns the value of name.
func (s *Mem) Get(name string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[name]
	if !ok {
		return "", &NotFoundError{Name: name, Store: "mem"}
	}
	return v, nil
}

// Set stores value under name.
func (s *Mem) Set(name, value string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]string{}
	}
	s.m[name] = value
	return nil
}

// Remove deletes name.
func (s *Mem) Remove(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[name]; !ok {
		return &NotFoundError{Name: name, Store: "mem"}
	}
	delete(s.m, name)
	return nil
}

// Names lists the names held, sorted.
func (s *Mem) Names() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.m))
	for n := range s.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}
