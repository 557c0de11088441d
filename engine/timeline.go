package engine

import (
	"context"
	"errors"

	"github.com/crw-dev/crw/engine/timeline"
	"github.com/crw-dev/crw/journal"
)

// Timeline reads a run's timeline out of its journal, while a process holds it or not. The
// rows stream into it: it keeps what opts say of each call, not the journal.
func (s *Service) Timeline(ctx context.Context, run string, opts timeline.Options) (*timeline.Timeline, error) {
	f, err := s.Fold(ctx, run, opts)
	if err != nil {
		return nil, err
	}
	return f.Timeline(), nil
}

// Fold folds a run's rows as Timeline does, and gives the fold: what reads its calls one at a
// time (Fold.Each) keeps no Timeline of them.
func (s *Service) Fold(ctx context.Context, run string, opts timeline.Options) (*timeline.Fold, error) {
	f := timeline.NewFold(opts)
	if err := s.Store.Rows(ctx, run, 1, func(row *journal.Row) error { f.Add(row); return nil }); err != nil {
		return nil, err
	}
	return f, nil
}

// TimelineCalls folds a run's rows without the calls' bodies, calls begin with the fold, then
// reads the journal again and hands each call to emit, bodies and all, in the timeline's
// order; end runs last. Memory stays flat however long the run: a call's bodies are kept only
// until it is emitted.
func (s *Service) TimelineCalls(ctx context.Context, run string, begin func(*timeline.Fold) error, emit func(*timeline.Call) error) error {
	f, err := s.Fold(ctx, run, timeline.Options{})
	if err != nil {
		return err
	}
	if err := begin(f); err != nil {
		return err
	}
	b := f.Bodies(emit)
	if err := s.Store.Rows(ctx, run, 1, b.Add); err != nil && !errors.Is(err, timeline.ErrRead) {
		return err
	}
	return b.Finish()
}
