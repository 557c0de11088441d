package engine

import (
	"context"

	"github.com/crw-dev/crw/engine/diagnosis"
)

// Inspect diagnoses a run, while a process holds it or not.
func (s *Service) Inspect(ctx context.Context, run string) (*diagnosis.Inspection, error) {
	st, err := s.Status(ctx, run)
	if err != nil {
		return nil, err
	}
	spec, err := s.Store.Spec(ctx, run)
	if err != nil {
		spec = nil // the inspection says what it can of a run whose spec does not read
	}
	log := ""
	if l := s.Store.Log(run); l != nil {
		log = l.Name()
	}
	idx, err := s.Store.Outstanding(ctx, run, diagnosis.MaxListed)
	if err != nil {
		return nil, err
	}
	return diagnosis.Inspect(st, spec, log, idx), nil
}
