package ec2

import (
	"context"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// HolderOf asks EC2 which ENI holds an address now (a not-found error:
// none). Unlike LookupByIP, it records the answer only for an ENI the
// state already knows: an ENI outside every scope, once recorded, would
// stay in the picture as it was read, and the address would look held
// there long after it was released.
func (s *State) HolderOf(ctx context.Context, ip string) (awstypes.ENI, error) {
	at := s.clock.Now()
	e, err := s.client.LookupByIP(ctx, ip)
	if err != nil {
		return e, err
	}
	s.mu.RLock()
	_, known := s.eniLocked(e.ID)
	s.mu.RUnlock()
	if known {
		s.Observe(e, at)
	}
	return e, nil
}
