package ec2

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// A reservation is created with its description and tags, listed with
// the subnet's others and gone once deleted; each call is one EC2 call
// through the client's metrics.
func TestSubnetCIDRReservationsRoundTrip(t *testing.T) {
	w := newWorld(t, emulator.World{})
	reg := prometheus.NewRegistry()
	c := w.client(t, Config{Registerer: reg})
	ctx := context.Background()
	r, err := c.CreateSubnetCIDRReservation(ctx, w.subnet, "10.0.1.0/28", "kept for pods", map[string]string{"team": "net"})
	if err != nil {
		t.Fatal(err)
	}
	want := SubnetCIDRReservation{ID: r.ID, SubnetID: w.subnet, CIDR: "10.0.1.0/28", Type: "explicit", Description: "kept for pods"}
	if r.ID == "" || r.SubnetID != want.SubnetID || r.CIDR != want.CIDR || r.Type != want.Type || r.Description != want.Description ||
		r.Tags["team"] != "net" {
		t.Fatalf("created %+v, want %+v with tag team=net", r, want)
	}
	v6, err := c.CreateSubnetCIDRReservation(ctx, w.subnet, "2600:1f18::100/120", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.ListSubnetCIDRReservations(ctx, w.subnet)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != r.ID || list[1].ID != v6.ID || list[0].Tags["team"] != "net" {
		t.Fatalf("listed %+v, want %s then %s", list, r.ID, v6.ID)
	}
	if err := c.DeleteSubnetCIDRReservation(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if list, err = c.ListSubnetCIDRReservations(ctx, w.subnet); err != nil || len(list) != 1 || list[0].ID != v6.ID {
		t.Fatalf("after the delete listed %+v (%v), want only %s", list, err, v6.ID)
	}
	for action, n := range map[string]float64{"CreateSubnetCidrReservation": 2, "GetSubnetCidrReservations": 2, "DeleteSubnetCidrReservation": 1} {
		if got := testutil.ToFloat64(c.metrics.calls.WithLabelValues(action)); got != n {
			t.Errorf("calls metric of %s is %v, want %v", action, got, n)
		}
	}
}

// GetSubnetCidrReservations is a read: it passes a closed write gate and
// is limited with the describes; Create and Delete are writes.
func TestSubnetCIDRReservationReadsPassTheWriteGate(t *testing.T) {
	w := newWorld(t, emulator.World{})
	closed := errors.New("not the leader")
	c := w.client(t, Config{WriteGate: func() error { return closed }})
	ctx := context.Background()
	if _, err := c.ListSubnetCIDRReservations(ctx, w.subnet); err != nil {
		t.Fatalf("listing behind a closed write gate: %v", err)
	}
	if _, err := c.CreateSubnetCIDRReservation(ctx, w.subnet, "10.0.1.0/28", "", nil); !errors.Is(err, closed) {
		t.Fatalf("creating behind a closed write gate: %v, want the gate's error", err)
	}
	if err := c.DeleteSubnetCIDRReservation(ctx, "scr-0123456789abcdef0"); !errors.Is(err, closed) {
		t.Fatalf("deleting behind a closed write gate: %v, want the gate's error", err)
	}
	if f := familyOf("GetSubnetCidrReservations", nil); f != FamilyDescribe {
		t.Errorf("GetSubnetCidrReservations is in family %s, want %s", f, FamilyDescribe)
	}
	if f := familyOf("CreateSubnetCidrReservation", nil); f != FamilyOtherMutation {
		t.Errorf("CreateSubnetCidrReservation is in family %s, want %s", f, FamilyOtherMutation)
	}
}
