package mem_test

import (
	"testing"

	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
	"github.com/crw-dev/crw/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) (store.Store, store.Store) {
			s := mem.New()
			return s, s
		},
		Revoke: func(t *testing.T, s store.Store, run string) { s.(*mem.Store).Revoke(run) },
	})
}
