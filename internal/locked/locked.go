// Package locked reads a value under the lock that guards it: the accessors of a type whose
// fields one mutex guards, written once.
package locked

import "sync"

// Read is *v, read under mu.
func Read[T any](mu *sync.Mutex, v *T) T {
	mu.Lock()
	defer mu.Unlock()
	return *v
}
