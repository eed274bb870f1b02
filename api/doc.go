// Package api is the HTTP surface of a Capsule node: the wire types, the
// http.Handlers that serve them and the clients that call them.
//
// There are two surfaces. The local API (NewLocalHandler, LocalClient) is how
// the CLI talks to the node on the same machine, over a unix socket in the
// node's data folder (mode 0600). The peer API (NewPeerHandler, PeerClient)
// is how nodes talk to each other, over mutual TLS with pinned node IDs (the
// TLS setup lives in package node; this package only sees http.Handlers and
// http.RoundTrippers).
//
// Move-protocol messages travel as opaque JSON (json.RawMessage) so that this
// package does not interpret the protocol: package transfer owns it and
// package node drives it. Blobs travel as a streaming binary body (see
// WriteBlobFrame), never as base64 inside JSON.
//
// Only package node, cmd/capsule and the web view (package ui) import this
// package.
package api
