package ec2conformance

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestENISettingsAgainstMoto runs the cases of motoCases (ENI settings,
// reserved addresses, ENI attributes, CIDR reservations) against moto's
// EC2 (moto_server), a second, independent model of EC2, when
// ENI_MOTO=1 (make conformance-moto). Cases of behaviour moto does
// not model are skipped by name in motoGaps, so what runs must pass.
func TestENISettingsAgainstMoto(t *testing.T) {
	if os.Getenv("ENI_MOTO") != "1" {
		t.Skip("set ENI_MOTO=1 to run against moto_server (make conformance-moto)")
	}
	tg := startMoto(t)
	for name, run := range motoCases() {
		t.Run(name, func(t *testing.T) {
			if why, gap := motoGaps()[name]; gap {
				t.Skip("moto does not model this: " + why)
			}
			run(t, tg)
		})
	}
}

// runOnSuite runs cases, in parallel, against the suite's target.
func runOnSuite(t *testing.T, cases map[string]func(*testing.T, *target)) {
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run(t, suite)
		})
	}
}

// motoCases are the cases that run against moto as well: the ENI
// settings, reserved addresses, ENI attributes and CIDR reservations.
func motoCases() map[string]func(*testing.T, *target) {
	all := settingsCases()
	for _, more := range []map[string]func(*testing.T, *target){reservedCases(), attributeCases(), reservationCases()} {
		for name, run := range more {
			all[name] = run
		}
	}
	return all
}

// motoGaps are the cases moto answers otherwise than EC2, and
// how.
// (moto 5.2.1; the rest pass against it.)
func motoGaps() map[string]string {
	return map[string]string{
		"AssignUnassignIPv6":              "AssignIpv6Addresses answers every address of the ENI as assigned, not the new ones",
		"NetworkCards":                    "AttachNetworkInterface ignores NetworkCardIndex (every attachment is on card 0)",
		"EFA":                             "CreateNetworkInterface ignores InterfaceType efa",
		"CreateRefusesIPv6WithoutCIDR":    "IPv6 addresses are given in subnets without an IPv6 CIDR",
		"CreateRefusesAddressesPrefixes":  "secondary addresses and prefixes are accepted together",
		"ReservedAddressesRefused":        "a subnet's reserved addresses are assigned when named",
		"AutoAssignmentSkipsReserved":     "automatic assignment gives the subnet's base+3 address and never runs out",
		"CIDRReservationLifecycle":        "CreateSubnetCidrReservation drops Description and TagSpecifications",
		"CIDRReservationFilters":          "GetSubnetCidrReservations with Filters answers HTTP 500",
		"AutoAssignmentAvoidsReservation": "automatic assignment takes addresses of explicit reservations",
	}
}

// startMoto starts moto_server on a free local port for the test's life.
func startMoto(t *testing.T) *target {
	t.Helper()
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		t.Fatalf("ENI_MOTO=1 but moto_server is not on PATH: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	noErr(t, err, "finding a free port")
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	noErr(t, cmd.Start(), "starting moto_server")
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/moto-api/", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("moto_server did not answer on %s within 30 s", endpoint)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return &target{endpoint: endpoint, region: suite.region, nets: newNetAllocator(), http: newHTTPClient()}
}
