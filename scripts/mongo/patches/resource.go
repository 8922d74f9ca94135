// Package resource replaces FerretDB's object-lifetime tracker in the local build (see ../build.sh).
//
// Upstream, Track sets a finalizer that panics when a tracked iterator is garbage-collected without
// being closed. In a release build that turns a small leak of an in-memory iterator (seen with sorted
// finds and $group aggregations under load) into a crash of the whole server. Tracking is a no-op here.
package resource

// Token identifies one tracked object.
type Token byte

// NewToken returns a token for Track and Untrack.
func NewToken() *Token { return new(Token) }

// Track does nothing: leaked iterators are ordinary garbage.
func Track(obj any, token *Token) {}

// Untrack does nothing.
func Untrack(obj any, token *Token) {}
