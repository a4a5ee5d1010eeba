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
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"github.com/eni-operator/eni-operator/internal/cli"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// options is everything the command line says.
type options struct {
	listen, region, seedFile string
	throttling, printVersion bool
	ignoreClientToken        bool
	latency, detachDelay     time.Duration
	visibility               time.Duration
	tagDelay, attachDelay    time.Duration
	deleteDelay              time.Duration
	faultRate                float64
	seed                     int64
}

// flags binds every flag of the command to o.
func flags(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("ec2-emulator", flag.ContinueOnError)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:4566", "address to serve the EC2 API on: host:port, :port or a bare port (port 0 picks a free one)")
	fs.StringVar(&o.region, "region", "us-east-1", "region reported in availability zones and ARNs (such as us-east-1)")
	fs.StringVar(&o.seedFile, "seed-file", "", "JSON World to load at start (same shape as POST /_emulator/world)")
	fs.BoolVar(&o.throttling, "throttling", false, "enforce AWS's per-action token buckets (RequestLimitExceeded when empty)")
	fs.DurationVar(&o.latency, "latency", 0, "latency added to every EC2 call (>= 0)")
	fs.Float64Var(&o.faultRate, "fault-rate", 0, "fraction of EC2 calls answered with 500 InternalError (0 to 1)")
	fs.DurationVar(&o.detachDelay, "detach-delay", 500*time.Millisecond, "how long a detached ENI stays 'detaching' (>= 0)")
	fs.DurationVar(&o.visibility, "visibility-delay", 0, "how long a created ENI stays unknown to other calls (EC2's eventual consistency; >= 0)")
	fs.DurationVar(&o.tagDelay, "tag-delay", 0, "how long Describe calls show an ENI's tags from before a CreateTags/DeleteTags (eventual consistency; >= 0)")
	fs.DurationVar(&o.attachDelay, "attach-delay", 0, "how long an attached ENI stays 'attaching' (>= 0)")
	fs.DurationVar(&o.deleteDelay, "delete-delay", 0, "how long Describe calls still show a deleted ENI (eventual consistency; >= 0)")
	fs.BoolVar(&o.ignoreClientToken, "ignore-client-token", false, "CreateNetworkInterface ignores ClientToken, as moto does: every call makes a new ENI (the token is still echoed)")
	fs.Int64Var(&o.seed, "seed", 1, "seed for generated IDs, MACs and fault choices")
	cli.BindVersion(fs, &o.printVersion)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: ec2-emulator [flags]

Serves the EC2 Query API (POST /) for the ENI subset of EC2 and an admin API
under %s (healthz, counts, counts/reset, calls, config, world, reset).
Point any AWS SDK at it with AWS_ENDPOINT_URL_EC2=http://<listen>.
Every flag is checked before anything starts; a refused value exits with status 2.

Flags:
`, emulator.AdminPrefix)
		cli.PrintDefaults(fs)
	}
	return fs
}

var regionName = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)

func parse(args []string, out io.Writer) (*options, error) {
	o := &options{}
	if err := cli.Parse(flags(o), args, out); err != nil {
		return nil, err
	}
	if o.printVersion {
		return o, nil
	}
	var p cli.Problems
	listen, ok := cli.ListenAddr(o.listen, false)
	p.Check(ok, "listen", o.listen, cli.ListenAddrAllowed(false))
	o.listen = listen
	p.Check(regionName.MatchString(o.region), "region", o.region, "an AWS region name such as us-east-1 or eu-central-2")
	if o.seedFile != "" {
		st, err := os.Stat(o.seedFile)
		p.Check(err == nil && st.Mode().IsRegular(), "seed-file", o.seedFile, "a JSON world file that exists, or empty for an empty world")
	}
	p.Check(o.latency >= 0, "latency", o.latency, "a duration >= 0, such as 20ms")
	p.Check(o.faultRate >= 0 && o.faultRate <= 1, "fault-rate", o.faultRate, "a fraction from 0 to 1, such as 0.05")
	p.Check(o.detachDelay >= 0, "detach-delay", o.detachDelay, "a duration >= 0, such as 500ms")
	p.Check(o.visibility >= 0, "visibility-delay", o.visibility, "a duration >= 0, such as 1s")
	p.Check(o.tagDelay >= 0, "tag-delay", o.tagDelay, "a duration >= 0, such as 1s")
	p.Check(o.attachDelay >= 0, "attach-delay", o.attachDelay, "a duration >= 0, such as 1s")
	p.Check(o.deleteDelay >= 0, "delete-delay", o.deleteDelay, "a duration >= 0, such as 1s")
	if err := p.Err(); err != nil {
		return nil, err
	}
	return o, nil
}

func main() { os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr)) }

// runMain runs the command and returns its exit status: 0, 2 for a
// refused command line (one line on stderr, before anything starts), 1
// when the emulator cannot run.
func runMain(args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if status, done := cli.Done(cli.Program{Name: "ec2-emulator", Version: version}, err, err == nil && o.printVersion, stdout, stderr); done {
		return status
	}
	if err := run(o); err != nil {
		fmt.Fprintln(stderr, "ec2-emulator:", err)
		return 1
	}
	return 0
}

func run(o *options) error {
	emu := emulator.New(emulator.Options{Region: o.region, Throttling: o.throttling, Latency: o.latency,
		FaultRate: o.faultRate, DetachDelay: o.detachDelay, VisibilityDelay: o.visibility,
		TagDelay: o.tagDelay, AttachDelay: o.attachDelay, DeleteDelay: o.deleteDelay, IgnoreClientToken: o.ignoreClientToken,
		Seed: o.seed})
	if o.seedFile != "" {
		b, err := os.ReadFile(o.seedFile)
		if err != nil {
			return err
		}
		var w emulator.World
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&w); err != nil {
			return fmt.Errorf("seed file %s: %w", o.seedFile, err)
		}
		if _, err := emu.Load(w); err != nil {
			return fmt.Errorf("seed file %s: %w", o.seedFile, err)
		}
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	log.Info("serving EC2 API", "endpoint", "http://"+ln.Addr().String(), "region", o.region, "throttling", o.throttling)
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
