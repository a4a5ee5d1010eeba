package ec2

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// Catalog is the VPC's subnets and security groups as last read.
type Catalog struct {
	Subnets []awstypes.Subnet
	Groups  []awstypes.SecurityGroup
	Read    time.Time
}

// catalog caches the Catalog: two paginated Describe calls per read for
// the whole process.
type catalog struct {
	mu sync.Mutex
	at Catalog
}

// Catalog returns the VPC's subnets and security groups, re-read when the
// copy held is maxAge old or older. Concurrent callers share one read.
func (s *State) Catalog(ctx context.Context, maxAge time.Duration) (Catalog, error) {
	s.catalog.mu.Lock()
	defer s.catalog.mu.Unlock()
	if c := s.catalog.at; !c.Read.IsZero() && s.clock.Since(c.Read) < maxAge {
		return c, nil
	}
	read := s.clock.Now()
	subnets, err := s.client.Subnets(ctx)
	if err != nil {
		return Catalog{}, fmt.Errorf("listing the VPC's subnets: %w", err)
	}
	groups, err := s.client.SecurityGroups(ctx)
	if err != nil {
		return Catalog{}, fmt.Errorf("listing the VPC's security groups: %w", err)
	}
	s.catalog.at = Catalog{Subnets: subnets, Groups: groups, Read: read}
	return s.catalog.at, nil
}
