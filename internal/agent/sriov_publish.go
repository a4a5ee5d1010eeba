package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// publish puts the bound devices of resources named by NodeENIs into the
// SR-IOV device plugin's config and tells the plugin when it changed.
// Problems are reported on the interfaces concerned.
func (sp *sriovPublisher) publish(ctx context.Context, outs []configResult, entries map[string]v1alpha1.InterfaceStatus, next *nodeState) {
	resources, users := publishable(outs, entries)
	m, err := sp.updateSRIOV(ctx, resources, next)
	if err != nil {
		users.failAll(entries, err.Error())
		return
	}
	for name, msg := range m.Conflicts {
		users.fail(entries, name, msg)
	}
	next.SRIOVOwned = m.Owned
	if err := sp.reloadSRIOV(ctx); err != nil {
		users.failAll(entries, err.Error())
	}
	published := map[string]bool{}
	for _, ids := range users {
		for _, id := range ids {
			published[id] = true
		}
	}
	for _, o := range outs {
		e := entries[o.w.ENIID]
		if !published[o.w.ENIID] || e.State != v1alpha1.InterfaceConfigured {
			continue
		}
		e.DPDKResourceName = o.w.Resource
		if o.kernel != nil {
			// The device published with its kernel driver; dpdkBound stays false.
			e.DPDKPCIAddress = o.kernel.Address
		}
		entries[o.w.ENIID] = e
	}
}

// resourceUsers maps an SR-IOV resource to the ENIs whose devices it
// publishes.
type resourceUsers map[string][]string

// fail reports msg on the interfaces of resource.
func (u resourceUsers) fail(entries map[string]v1alpha1.InterfaceStatus, resource, msg string) {
	for _, id := range u[resource] {
		e := entries[id]
		e.State, e.Message = v1alpha1.InterfaceFailed, msg
		entries[id] = e
	}
}

// failAll reports msg on the interfaces of every resource.
func (u resourceUsers) failAll(entries map[string]v1alpha1.InterfaceStatus, msg string) {
	for name := range u {
		u.fail(entries, name, msg)
	}
}

// publishable gathers the resources NodeENIs name from their configured
// interfaces (sorted by name, addresses and drivers sorted), and which
// ENIs each one publishes: devices bound to a DPDK driver, and devices
// left with their kernel driver when DPDK is off (SR-IOV without DPDK),
// each with the driver sysfs shows.
func publishable(outs []configResult, entries map[string]v1alpha1.InterfaceStatus) ([]sriovResource, resourceUsers) {
	byName := map[string]*sriovResource{}
	users := resourceUsers{}
	for _, o := range outs {
		w := o.w
		if w.Resource == "" || entries[w.ENIID].State != v1alpha1.InterfaceConfigured {
			continue
		}
		var pci, driver string
		switch {
		case o.dpdk != nil && entries[w.ENIID].DPDKBound:
			pci, driver = o.dpdk.PCIAddress, o.dpdk.BoundDriver
		case o.kernel != nil:
			pci, driver = o.kernel.Address, o.kernel.Driver
		default:
			continue
		}
		res := byName[w.Resource]
		if res == nil {
			res = &sriovResource{Name: w.Resource}
			byName[w.Resource] = res
		}
		res.PCIAddresses = appendUnique(res.PCIAddresses, pci)
		res.Drivers = appendUnique(res.Drivers, driver)
		users[w.Resource] = append(users[w.Resource], w.ENIID)
	}
	var resources []sriovResource
	for _, res := range byName {
		slices.Sort(res.PCIAddresses)
		slices.Sort(res.Drivers)
		resources = append(resources, *res)
	}
	slices.SortFunc(resources, func(a, b sriovResource) int { return cmp.Compare(a.Name, b.Name) })
	return resources, users
}

// sriovAttempts bounds the merges of one pass when someone else keeps
// writing the device plugin config between the agent's read and write.
const sriovAttempts = 5

// updateSRIOV merges the agent's resources into the device plugin config
// and writes it when that changed something. The file is shared (an
// operator or another tool may edit it at any time): when it changed
// between the read and the write, the write is dropped and the merge done
// again from the new content, so the other writer's entries are kept.
func (sp *sriovPublisher) updateSRIOV(ctx context.Context, resources []sriovResource, next *nodeState) (sriovMerge, error) {
	logger := log.FromContext(ctx)
	for attempt := 1; ; attempt++ {
		existing, err := os.ReadFile(sp.path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			logger.Error(err, "reading the SR-IOV device plugin config", "path", sp.path)
			return sriovMerge{}, fmt.Errorf("reading the SR-IOV device plugin config %s: %w", sp.path, err)
		}
		m, err := mergeSRIOV(existing, next.SRIOVOwned, resources)
		if err != nil {
			logger.Error(err, "merging into the SR-IOV device plugin config", "path", sp.path)
			return sriovMerge{}, fmt.Errorf("SR-IOV device plugin config %s: %w", sp.path, err)
		}
		if !m.Changed {
			return m, nil
		}
		err = sp.writeSRIOV(ctx, m, existing, next)
		if !errors.Is(err, errConfigChanged) || attempt == sriovAttempts {
			return m, err
		}
		logger.Info("the SR-IOV device plugin config changed while the agent merged into it; merging again", "path", sp.path)
	}
}

// writeSRIOV writes the merged device plugin config, unless the file no
// longer holds existing, what the merge read (errConfigChanged). The
// resources are recorded as owned before the write: a crash in between
// leaves an entry the agent knows to remove, never one it forgot it wrote.
func (sp *sriovPublisher) writeSRIOV(ctx context.Context, m sriovMerge, existing []byte, next *nodeState) error {
	logger := log.FromContext(ctx)
	next.SRIOVOwned = unionSorted(next.SRIOVOwned, m.Owned)
	if err := sp.saved.persist(next); err != nil {
		return err
	}
	if sp.race != nil {
		sp.race()
	}
	err := writeAtomicIf(sp.path, m.Config, 0o644, func() []byte { return existing })
	sp.metrics.op("sriov-write", err)
	if err != nil {
		logger.Error(err, "writing the SR-IOV device plugin config", "path", sp.path)
		return fmt.Errorf("writing the SR-IOV device plugin config %s: %w", sp.path, err)
	}
	logger.Info("SR-IOV device plugin config written", "path", sp.path, "resources", m.Owned)
	sp.reloadPending = true
	return nil
}

// reloadSRIOV tells the device plugin its config changed, when a write
// has not been told yet (a failed reload is retried on the next pass).
func (sp *sriovPublisher) reloadSRIOV(ctx context.Context) error {
	if !sp.reloadPending {
		return nil
	}
	cfg, _ := os.ReadFile(sp.path)
	err := sp.reload.Do(cfg)
	sp.metrics.op("sriov-reload", err)
	sp.reloadPending = err != nil
	if err != nil {
		log.FromContext(ctx).Error(err, "telling the SR-IOV device plugin its config changed; will retry", "how", sp.reload.String())
		return fmt.Errorf("the SR-IOV device plugin config is written, but telling the plugin failed (%s): %w", sp.reload.String(), err)
	}
	return nil
}

func appendUnique(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func unionSorted(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, v := range b {
		out = appendUnique(out, v)
	}
	slices.Sort(out)
	return out
}
