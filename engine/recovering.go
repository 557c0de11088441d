package engine

import (
	"context"
	"errors"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
)

// ActingStatus is the status of a run a command is about to act on (resume it, detached or
// with a change, answer it, cancel it, give a verdict on it): a journal a machine's restart
// left waiting for its recovery from its log (journal_unrecovered, which every reader says,
// naming the resume) is recovered first, as that resume would recover it, by taking the run
// and letting it go at once, and its status read again. Without it each of those commands
// refused and named a resume that, given with their flags, refused too.
func (s *Service) ActingStatus(ctx context.Context, run string) (*store.Status, error) {
	st, err := s.Status(ctx, run)
	if !unrecovered(err) {
		return st, err
	}
	lease, aerr := s.Store.Acquire(ctx, run)
	switch {
	case aerr == nil:
		if rerr := lease.Release(); rerr != nil {
			return nil, rerr
		}
	case errors.Is(aerr, store.ErrHeld):
		// A process took the run meanwhile: its open recovered the journal.
	default:
		return nil, aerr
	}
	return s.Status(ctx, run)
}

// unrecovered is whether err says a run's journal waits for its recovery after a machine's
// restart.
func unrecovered(err error) bool {
	e, ok := errs.As(err)
	return ok && e.Reason() == "journal_unrecovered"
}
