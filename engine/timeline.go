package engine

import (
	"context"

	"github.com/crw-dev/crw/engine/timeline"
	"github.com/crw-dev/crw/journal"
)

// Timeline reads a run's timeline out of its journal, while a process holds it or not.
func (s *Service) Timeline(ctx context.Context, run string) (*timeline.Timeline, error) {
	// The rows stream into the timeline: it keeps what it shows of each call, not the journal.
	f := timeline.NewFold()
	if err := s.Store.Rows(ctx, run, 1, func(row *journal.Row) error { f.Add(row); return nil }); err != nil {
		return nil, err
	}
	return f.Timeline(), nil
}
