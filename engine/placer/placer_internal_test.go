package placer

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/engine/workspace"
)

// TestAFreshCheckoutNeverTakesAHeldFolder: a call's own checkout name may already be taken, by
// a checkout an earlier process made for it and a resume handed to another call, or one idle:
// the new checkout gets a name of its own then, and a folder in use is never removed under
// the call working in it.
func TestAFreshCheckoutNeverTakesAHeldFolder(t *testing.T) {
	root := t.TempDir()
	ws := &Placer{root: root, busy: map[string]bool{}, seals: map[string]workspace.Seal{}, maxIdle: 2}
	c4 := Call{ID: "c4", Attempt: 1}
	own := filepath.Join(root, "c4-g1")
	assert.Equal(t, own, ws.freshPath(c4), "free: the call's own name")
	ws.forget(own)

	ws.busy[own] = true // another call works in it
	got := ws.freshPath(c4)
	assert.Equal(t, own+"-2", got)
	ws.idle = append(ws.idle, idleCheckout{path: got, commit: "x"}) // and that one went idle
	delete(ws.busy, got)
	assert.Equal(t, own+"-3", ws.freshPath(c4))
	assert.True(t, ws.busy[own+"-3"], "held from the moment it is named")

	ws.setSeal(own+"-3", "sealed")
	ws.forget(own + "-3")
	assert.False(t, ws.busy[own+"-3"])
	assert.Empty(t, ws.sealOf(own+"-3"), "a removed checkout's seal goes with it")
}
