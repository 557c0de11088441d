package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/bound"
	"github.com/crw-dev/crw/store"
)

// Binding is what a process of a session run needs of its owner's binding: the state folder's
// bindings, the run's orchestrator line and whether another run is live (an owner that serves
// a live run stays bound to it).
type Binding struct {
	Bindings bound.Store
	Line     bound.Line
	Live     func(run string) bool
}

var _ backend.Lifecycle = (*Backend)(nil)

// OnStart implements backend.Lifecycle: the owner is bound to the run again, when its line is
// not the one in force (a line of another run that is not live is closed first). What keeps it
// from binding is the error: a warning, and the run goes on.
func (b *Backend) OnStart(ctx context.Context, _ backend.RunStarted) error {
	if b.cfg.Binding == nil {
		return nil
	}
	if w := b.cfg.Binding.Bindings.BindOwner(b.cfg.Owner, b.cfg.Binding.Line, b.cfg.Binding.Live); w != "" {
		return errors.New(w)
	}
	return nil
}

// OnEnd implements backend.Lifecycle: a run that has ended lets its owner go. A paused run (or
// one that waits for a decision) keeps it, and so does a process that stopped without ending
// the run: its line is closed by the next bind once the run is not live.
func (b *Backend) OnEnd(ctx context.Context, end *store.Status) error {
	if b.cfg.Binding == nil || end == nil || end.State != store.StateEnded {
		return nil
	}
	if err := b.cfg.Binding.Bindings.Close(b.cfg.Owner, b.cfg.Run); err != nil {
		return fmt.Errorf("the owner's binding cannot be closed: %w", err)
	}
	return nil
}
