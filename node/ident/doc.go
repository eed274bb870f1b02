// Package ident owns a node's identity: its ed25519 key (the file
// DATA/node.key, written once with mode 0600), the node ID derived from the
// public key alone, and the self-signed TLS certificate peers pin.
//
// It is the bottom of the node's packages: it knows nothing of agents,
// records, moves or peers, and must not import any other package of the
// node. node/record signs and verifies records with it; node (the daemon)
// loads the key at start and builds its TLS configuration from it. It
// holds no state and no locks.
package ident
