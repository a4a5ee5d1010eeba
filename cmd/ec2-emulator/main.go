// Command ec2-emulator serves the EC2 Query API for the ENI subset of EC2,
// so that the operator, its tests and its benchmarks run without AWS.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/eni-operator/eni-operator/internal/emulator"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ec2-emulator:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		listen      = flag.String("listen", "127.0.0.1:4566", "address to serve the EC2 API on (port 0 picks a free one)")
		region      = flag.String("region", "us-east-1", "region reported in availability zones and ARNs")
		seedFile    = flag.String("seed-file", "", "JSON World to load at start (same shape as POST /_emulator/world)")
		throttling  = flag.Bool("throttling", false, "enforce AWS's per-action token buckets (RequestLimitExceeded when empty)")
		latency     = flag.Duration("latency", 0, "latency added to every EC2 call")
		faultRate   = flag.Float64("fault-rate", 0, "fraction of EC2 calls answered with 500 InternalError")
		detachDelay = flag.Duration("detach-delay", 500*time.Millisecond, "how long a detached ENI stays 'detaching'")
		visibility  = flag.Duration("visibility-delay", 0, "how long a created ENI stays unknown to other calls (EC2's eventual consistency)")
		seed        = flag.Int64("seed", 1, "seed for generated IDs, MACs and fault choices")
	)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), `Usage: ec2-emulator [flags]

Serves the EC2 Query API (POST /) for the ENI subset of EC2 and an admin API
under %s (healthz, counts, counts/reset, calls, config, world, reset).
Point any AWS SDK at it with AWS_ENDPOINT_URL_EC2=http://<listen>.

Flags:
`, emulator.AdminPrefix)
		flag.PrintDefaults()
	}
	flag.Parse()
	if *faultRate < 0 || *faultRate > 1 {
		return fmt.Errorf("--fault-rate must be within [0,1], got %v", *faultRate)
	}
	emu := emulator.New(emulator.Options{Region: *region, Throttling: *throttling, Latency: *latency,
		FaultRate: *faultRate, DetachDelay: *detachDelay, VisibilityDelay: *visibility, Seed: *seed})
	if *seedFile != "" {
		b, err := os.ReadFile(*seedFile)
		if err != nil {
			return err
		}
		var w emulator.World
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&w); err != nil {
			return fmt.Errorf("seed file %s: %w", *seedFile, err)
		}
		if _, err := emu.Load(w); err != nil {
			return fmt.Errorf("seed file %s: %w", *seedFile, err)
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	log.Info("serving EC2 API", "endpoint", "http://"+ln.Addr().String(), "region", *region, "throttling", *throttling)
	srv := &http.Server{Handler: emu, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
