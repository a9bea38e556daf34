package tokens

import (
	"errors"
	"sort"
	"sync"
)

// Store keeps master keys and tokens for a Manager; several managers (proxy
// replicas) may share one store. Every error a store returns names the store
// (see Name) and what it was doing.
type Store interface {
	// Name says which store this is, for errors and logs ("memory",
	// "ZooKeeper 127.0.0.1:2181 /hivedelegationMETASTORE").
	Name() string

	// AddKey stores a new master key and returns the id the store assigned
	// it (the key is stored again under that id). Ids are unique in the
	// store, so replicas never sign with the same key id.
	AddKey(k DelegationKey) (int32, error)
	// UpdateKey replaces the stored key with k.ID (its expiry changes when a
	// key is rolled).
	UpdateKey(k DelegationKey) error
	// RemoveKey deletes a key; a missing key is not an error.
	RemoveKey(id int32) error
	// Keys returns every stored key.
	Keys() ([]DelegationKey, error)

	// AddToken stores a new token's information under its identifier bytes.
	AddToken(identifier []byte, info TokenInfo) error
	// UpdateToken replaces a token's information (renewal); ErrNotFound
	// when the token is gone.
	UpdateToken(identifier []byte, info TokenInfo) error
	// RemoveToken deletes a token and reports whether it existed.
	RemoveToken(identifier []byte) (bool, error)
	// Token returns a token's information, or nil when the store has none.
	Token(identifier []byte) (*TokenInfo, error)
	// Tokens returns the identifier bytes of every stored token.
	Tokens() ([][]byte, error)

	Close() error
}

// ErrNotFound is returned by UpdateToken for a token the store does not hold.
var ErrNotFound = errors.New("token not found in store")

// MemoryStore keeps keys and tokens in this process (Hive's MemoryTokenStore):
// tokens do not survive a restart and are not shared between replicas.
type MemoryStore struct {
	mu     sync.Mutex
	nextID int32
	keys   map[int32]DelegationKey
	tokens map[string]TokenInfo
}

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{keys: map[int32]DelegationKey{}, tokens: map[string]TokenInfo{}}
}

// Name implements Store.
func (*MemoryStore) Name() string { return "memory" }

// AddKey implements Store.
func (s *MemoryStore) AddKey(k DelegationKey) (int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	k.ID = s.nextID
	k.Key = append([]byte(nil), k.Key...)
	s.keys[k.ID] = k
	return k.ID, nil
}

// UpdateKey implements Store.
func (s *MemoryStore) UpdateKey(k DelegationKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k.Key = append([]byte(nil), k.Key...)
	s.keys[k.ID] = k
	return nil
}

// RemoveKey implements Store.
func (s *MemoryStore) RemoveKey(id int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keys, id)
	return nil
}

// Keys implements Store.
func (s *MemoryStore) Keys() ([]DelegationKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]DelegationKey, 0, len(s.keys))
	for _, k := range s.keys {
		k.Key = append([]byte(nil), k.Key...)
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// AddToken implements Store.
func (s *MemoryStore) AddToken(identifier []byte, info TokenInfo) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	info.Password = append([]byte(nil), info.Password...)
	s.tokens[string(identifier)] = info
	return nil
}

// UpdateToken implements Store.
func (s *MemoryStore) UpdateToken(identifier []byte, info TokenInfo) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tokens[string(identifier)]; !ok {
		return ErrNotFound
	}
	info.Password = append([]byte(nil), info.Password...)
	s.tokens[string(identifier)] = info
	return nil
}

// RemoveToken implements Store.
func (s *MemoryStore) RemoveToken(identifier []byte) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.tokens[string(identifier)]
	delete(s.tokens, string(identifier))
	return ok, nil
}

// Token implements Store.
func (s *MemoryStore) Token(identifier []byte) (*TokenInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	info, ok := s.tokens[string(identifier)]
	if !ok {
		return nil, nil
	}
	info.Password = append([]byte(nil), info.Password...)
	return &info, nil
}

// Tokens implements Store.
func (s *MemoryStore) Tokens() ([][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, 0, len(s.tokens))
	for id := range s.tokens {
		out = append(out, []byte(id))
	}
	return out, nil
}

// Close implements Store.
func (*MemoryStore) Close() error { return nil }
