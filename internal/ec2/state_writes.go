package ec2

import (
	"context"
	"maps"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// The State's reads and writes of EC2. Each goes through the client
// (batched, rate-limited, counted) and, when it succeeds, is applied to
// the state here — the one place this process's own changes enter it.

// LookupByIP finds the ENI holding a private address with a batched
// DescribeNetworkInterfaces and records it.
func (s *State) LookupByIP(ctx context.Context, ip string) (awstypes.ENI, error) {
	at := s.clock.Now()
	e, err := s.client.LookupByIP(ctx, ip)
	if err == nil {
		s.Observe(e, at)
	}
	return e, err
}

// GetENI reads one ENI (batched with concurrent reads) and records it,
// or that it is gone.
func (s *State) GetENI(ctx context.Context, id string) (awstypes.ENI, error) {
	at := s.clock.Now()
	e, err := s.client.GetENI(ctx, id)
	switch {
	case err == nil:
		s.Observe(e, at)
	case IsNotFound(err):
		s.Forget(id)
	}
	return e, err
}

// ListENIs reads the VPC's ENIs matching filters and records them.
func (s *State) ListENIs(ctx context.Context, filters ...Filter) ([]awstypes.ENI, error) {
	at := s.clock.Now()
	list, err := s.client.ListENIs(ctx, filters...)
	for _, e := range list {
		s.Observe(e, at)
	}
	return list, err
}

// GetInstance reads one instance (batched with concurrent reads).
func (s *State) GetInstance(ctx context.Context, id string) (Instance, error) {
	return s.client.GetInstance(ctx, id)
}

// MaxENIs returns how many network interfaces an instance type takes
// (read once per type for the life of the process).
func (s *State) MaxENIs(ctx context.Context, instanceType string) (int, error) {
	return s.types.MaxENIs(ctx, instanceType)
}

// InstanceLimits returns an instance type's network limits: interfaces
// in all and per network card, addresses per interface, IPv6 and EFA
// support (read once per type for the life of the process).
func (s *State) InstanceLimits(ctx context.Context, instanceType string) (awstypes.InstanceLimits, error) {
	return s.types.Limits(ctx, instanceType)
}

// CreateTags sets tags on an ENI.
func (s *State) CreateTags(ctx context.Context, id string, tags map[string]string) error {
	return s.tagged(id, tags, s.client.CreateTags(ctx, id, tags))
}

// CreateTagsAlone sets tags no other ENI is given with it, at once
// (Client.CreateTagsAlone).
func (s *State) CreateTagsAlone(ctx context.Context, id string, tags map[string]string) error {
	return s.tagged(id, tags, s.client.CreateTagsAlone(ctx, id, tags))
}

// tagged records a tag write's success in the state.
func (s *State) tagged(id string, tags map[string]string, err error) error {
	if err != nil {
		return err
	}
	s.noteWrite(id, tagWrite{at: s.clock.Now(), set: tags})
	s.update(id, func(e *awstypes.ENI) {
		for k, v := range tags {
			e.Tags[intern(k)] = intern(v)
		}
	})
	return nil
}

// noteWrite remembers a tag write for readings that may not show it yet,
// in a copy of its own (shared with equal writes): the caller may reuse
// its map.
func (s *State) noteWrite(id string, w tagWrite) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.set, w.del = s.shareTagsLocked(w.set), s.shareTagsLocked(w.del)
	s.recent.noteTags(id, w)
}

// DeleteTags removes tags from an ENI where they still hold the values
// given.
func (s *State) DeleteTags(ctx context.Context, id string, tags map[string]string) error {
	if err := s.client.DeleteTags(ctx, id, tags); err != nil {
		return err
	}
	s.noteWrite(id, tagWrite{at: s.clock.Now(), del: tags})
	s.update(id, func(e *awstypes.ENI) {
		for k, v := range tags {
			if e.Tags[k] == v {
				delete(e.Tags, k)
			}
		}
	})
	return nil
}

// CreateENI creates an ENI and records it. An answer replayed for a
// ClientToken may omit what was set at creation; the request fills it in.
func (s *State) CreateENI(ctx context.Context, in awstypes.CreateENIInput) (awstypes.ENI, error) {
	e, err := s.client.CreateENI(ctx, in)
	if err != nil {
		return e, err
	}
	if len(e.Tags) == 0 {
		e.Tags = maps.Clone(in.Tags)
	}
	if e.InterfaceType == "" {
		e.InterfaceType = "interface" // what CreateNetworkInterface makes without InterfaceType
	}
	if e.Status == "deleted" {
		s.Forget(e.ID)
		return e, nil
	}
	now := s.clock.Now()
	s.mu.Lock()
	s.recent.created[e.ID] = now
	s.mu.Unlock()
	s.Observe(e, now)
	return e, nil
}

// AttachENI attaches an ENI at a device index of a network card and
// records the attachment.
func (s *State) AttachENI(ctx context.Context, id, instanceID string, deviceIndex, networkCard int) (string, error) {
	attachmentID, err := s.client.AttachENI(ctx, id, instanceID, deviceIndex, networkCard)
	if err != nil {
		return "", err
	}
	s.update(id, func(e *awstypes.ENI) {
		e.Status = "in-use"
		e.Attachment = &awstypes.Attachment{ID: attachmentID, InstanceID: instanceID, DeviceIndex: deviceIndex, NetworkCardIndex: networkCard,
			Status: "attached"}
	})
	return attachmentID, nil
}

// SetDeleteOnTermination sets whether the ENI goes with its instance.
func (s *State) SetDeleteOnTermination(ctx context.Context, id, attachmentID string, value bool) error {
	if err := s.client.SetDeleteOnTermination(ctx, id, attachmentID, value); err != nil {
		return err
	}
	s.update(id, func(e *awstypes.ENI) {
		if e.Attachment != nil {
			e.Attachment.DeleteOnTermination = value
		}
	})
	return nil
}

// SetSecurityGroups replaces an ENI's security groups.
func (s *State) SetSecurityGroups(ctx context.Context, id string, groups []string) error {
	if err := s.client.SetSecurityGroups(ctx, id, groups); err != nil {
		return err
	}
	s.update(id, func(e *awstypes.ENI) { e.SecurityGroups = append([]string(nil), groups...) })
	return nil
}

// SetDescription changes an ENI's description.
func (s *State) SetDescription(ctx context.Context, id, description string) error {
	if err := s.client.SetDescription(ctx, id, description); err != nil {
		return err
	}
	s.update(id, func(e *awstypes.ENI) { e.Description = description })
	return nil
}

// DetachENI starts detaching an ENI from its attachment and records it
// as detaching.
func (s *State) DetachENI(ctx context.Context, id, attachmentID string, force bool) error {
	if err := s.client.DetachENI(ctx, attachmentID, force); err != nil {
		return err
	}
	s.update(id, func(e *awstypes.ENI) {
		if e.Attachment != nil {
			e.Attachment.Status = "detaching"
		}
	})
	return nil
}

// DeleteENI deletes an available ENI and records it gone (also when EC2
// says it already was).
func (s *State) DeleteENI(ctx context.Context, id string) error {
	err := s.client.DeleteENI(ctx, id)
	if err == nil || IsNotFound(err) {
		s.mu.Lock()
		s.recent.deleted[id] = s.clock.Now()
		s.mu.Unlock()
		s.Forget(id)
	}
	return err
}
