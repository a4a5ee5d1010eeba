package ec2

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// The start-up check names each missing action in the gauge, keeps the
// process running, checks again after Retry, and ends once it passes.
func TestPermissionCheckNamesMissingActionsAndRetries(t *testing.T) {
	w := newWorld(t, emulator.World{})
	if err := w.emu.Configure(emulator.Config{Denied: []string{"CreateTags"}}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	p := &PermissionCheck{Client: w.client(t, Config{}), Retry: 100 * time.Millisecond, Missing: NewPermissionGauge(reg),
		Actions: []string{"ec2:CreateTags", "ec2:DescribeNetworkInterfaces"}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for testutil.ToFloat64(p.Missing.WithLabelValues("ec2:CreateTags")) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the missing CreateTags permission was not reported")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := testutil.ToFloat64(p.Missing.WithLabelValues("ec2:DescribeNetworkInterfaces")); got != 0 {
		t.Fatalf("permission_missing{ec2:DescribeNetworkInterfaces} = %v, want 0", got)
	}
	select {
	case err := <-done:
		t.Fatalf("the check stopped while a permission is missing: %v", err)
	default:
	}
	if err := w.emu.Configure(emulator.Config{Denied: []string{}}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(p.Missing.WithLabelValues("ec2:CreateTags")); got != 0 {
		t.Fatalf("permission_missing{ec2:CreateTags} = %v after the grant, want 0", got)
	}
}
