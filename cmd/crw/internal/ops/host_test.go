package ops

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/store"
)

func TestAHostIDIsARecordKey(t *testing.T) {
	t.Parallel()
	a, b := HostID("/var/lib/crw/a"), HostID("/var/lib/crw/b")
	assert.NotEqual(t, a, b, "two state folders are two hosts")
	assert.Equal(t, a, HostID("/var/lib/crw/a"))
	assert.Equal(t, a, HostID("/var/lib/crw/x/../a"), "a folder is named as its absolute path")
	assert.True(t, store.ValidKey(a), a)
}
