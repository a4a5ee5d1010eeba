// Command eni-sandbox runs the whole system on one machine, with no
// cluster and no AWS account (internal/sandbox): etcd + kube-apiserver,
// the EC2 emulator, the operator, demo pods and a NodeENI. `make demo`
// runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/eni-operator/eni-operator/internal/cachedbin"
	"github.com/eni-operator/eni-operator/internal/sandbox"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "eni-sandbox:", err)
		os.Exit(1)
	}
}

func run() error {
	var o sandbox.Options
	flag.StringVar(&o.EmulatorListen, "emulator-listen", "127.0.0.1:4566", "address of the EC2 emulator (port 0 picks a free one)")
	flag.StringVar(&o.WorldFile, "world", "", "emulator world (default hack/demo/world.json)")
	flag.StringVar(&o.NodeENIFile, "nodeeni", "", "NodeENI to apply (default config/samples/nodeeni-subnet-names.yaml)")
	flag.DurationVar(&o.Timeout, "timeout", 3*time.Minute, "how long to wait for the pods to be tagged and the NodeENI to be Ready")
	flag.BoolVar(&o.Once, "once", false, "print the report and stop everything instead of running until Ctrl-C")
	dir := flag.String("dir", "", "directory for the kubeconfig and the operator log (default: a new temporary directory, removed at exit)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: eni-sandbox [flags]\n\nRuns etcd, kube-apiserver, the EC2 emulator and the operator on this machine, applies\ndemo pods and a NodeENI, prints what the operator did, and keeps running until Ctrl-C.\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	root, err := cachedbin.RepoRoot()
	if err != nil {
		return err
	}
	o.Root, o.Version = root, version
	if *dir == "" {
		tmp, err := os.MkdirTemp("", "eni-sandbox-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		*dir = tmp
	} else if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	o.Dir, _ = filepath.Abs(*dir)

	// The operator's log goes to a file: the terminal is for the report.
	logFile, err := os.Create(filepath.Join(o.Dir, "operator.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	logger := zap.New(zap.WriteTo(logFile))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal, a second one ends the process at once
		// (the default), should the orderly shutdown hang.
		<-ctx.Done()
		stop()
	}()
	return sandbox.Run(ctx, o)
}
