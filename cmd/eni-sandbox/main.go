// Command eni-sandbox runs the whole system on one machine, with no
// cluster and no AWS account (internal/kit/sandbox): etcd + kube-apiserver,
// the EC2 emulator, the operator, demo pods and a NodeENI. `make demo`
// runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/eni-operator/eni-operator/internal/cli"
	"github.com/eni-operator/eni-operator/internal/kit/cachedbin"
	"github.com/eni-operator/eni-operator/internal/kit/sandbox"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// cmdline is everything the command line says.
type cmdline struct {
	o            sandbox.Options
	dir          string
	printVersion bool
}

// flags binds every flag of the command to c.
func flags(c *cmdline) *flag.FlagSet {
	fs := flag.NewFlagSet("eni-sandbox", flag.ContinueOnError)
	fs.StringVar(&c.o.EmulatorListen, "emulator-listen", "127.0.0.1:4566", "address of the EC2 emulator: host:port, :port or a bare port (port 0 picks a free one)")
	fs.StringVar(&c.o.WorldFile, "world", "", "emulator world file (default hack/demo/world.json)")
	fs.StringVar(&c.o.NodeENIFile, "nodeeni", "", "NodeENI file to apply (default config/samples/nodeeni-subnet-names.yaml)")
	fs.DurationVar(&c.o.Timeout, "timeout", 3*time.Minute, "how long to wait for the pods to be tagged and the NodeENI to be Ready (> 0)")
	fs.BoolVar(&c.o.Once, "once", false, "print the report and stop everything instead of running until Ctrl-C")
	fs.BoolVar(&c.o.OperatorAsAdmin, "operator-as-admin", false, "run the operator with the administrator's credentials, with no RBAC and no admission policy (default: as its ServiceAccount eni-operator/eni-operator, with config/rbac's RBAC and admission policies, the chart's)")
	fs.StringVar(&c.dir, "dir", "", "directory for the kubeconfig and the operator log; the log stays, the kubeconfig is removed at exit (default: the sandbox's temporary directory, removed at exit)")
	cli.BindVersion(fs, &c.printVersion)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: eni-sandbox [flags]\n\nRuns etcd, kube-apiserver, the EC2 emulator and the operator on this machine, applies\ndemo pods and a NodeENI, prints what the operator did, and keeps running until Ctrl-C.\nEvery flag is checked before anything starts; a refused value exits with status 2.\n\nFlags:\n")
		cli.PrintDefaults(fs)
	}
	return fs
}

func parse(args []string, out io.Writer) (*cmdline, error) {
	c := &cmdline{}
	if err := cli.Parse(flags(c), args, out); err != nil {
		return nil, err
	}
	if c.printVersion {
		return c, nil
	}
	var p cli.Problems
	listen, ok := cli.ListenAddr(c.o.EmulatorListen, false)
	p.Check(ok, "emulator-listen", c.o.EmulatorListen, cli.ListenAddrAllowed(false))
	c.o.EmulatorListen = listen
	for _, f := range []struct{ name, path, what string }{
		{"world", c.o.WorldFile, "an emulator world file that exists, or empty for hack/demo/world.json"},
		{"nodeeni", c.o.NodeENIFile, "a NodeENI file that exists, or empty for config/samples/nodeeni-subnet-names.yaml"},
	} {
		if f.path != "" {
			st, err := os.Stat(f.path)
			p.Check(err == nil && st.Mode().IsRegular(), f.name, f.path, f.what)
		}
	}
	p.Check(c.o.Timeout > 0, "timeout", c.o.Timeout, "a duration > 0, such as 3m")
	if c.dir != "" {
		st, err := os.Stat(c.dir)
		p.Check(err != nil && os.IsNotExist(err) || err == nil && st.IsDir(), "dir", c.dir,
			"a directory, or a path where one can be made (default: the sandbox's temporary directory)")
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

func main() {
	c, err := parse(os.Args[1:], os.Stderr)
	if status, done := cli.Done(cli.Program{Name: "eni-sandbox", Version: version}, err, err == nil && c.printVersion, os.Stdout, os.Stderr); done {
		os.Exit(status)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "eni-sandbox:", err)
		os.Exit(1)
	}
}

func run(c *cmdline) error {
	o, dir := c.o, &c.dir
	root, err := cachedbin.RepoRoot()
	if err != nil {
		return err
	}
	o.Root, o.Version = root, version

	// Stop on Ctrl-C (SIGINT), SIGTERM and SIGHUP (the terminal closed),
	// and when the output has nowhere to go. SIGPIPE is received rather
	// than left at its default: a write to stdout or stderr whose reader
	// died (`make demo | tee log`, tee gone) then fails with EPIPE — which
	// stops the sandbox in order — instead of killing it before it stopped
	// what it started.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	base, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stopWith := func(reason string) { cancel(errors.New(reason)) }
	ctx, stop := signal.NotifyContext(base, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	go func() {
		// After the first signal, a second one ends the process at once
		// (the default), should the orderly shutdown hang: etcd and
		// kube-apiserver die with it, and the next sandbox removes its
		// directory.
		<-ctx.Done()
		stop()
	}()
	go sandbox.WatchOutput(ctx, stopWith, os.Stdout, os.Stderr)
	o.Out = &sandbox.EPIPEWriter{W: os.Stdout, Stop: stopWith}
	o.Progress = &sandbox.EPIPEWriter{W: os.Stderr, Stop: stopWith}

	// Everything the sandbox writes goes to its state directory, removed
	// at exit (or by the next sandbox, should this one be killed): TMPDIR
	// points there, so etcd's data and the API server's certificates and
	// keys (the control plane's temporary directory) do too.
	state, err := sandbox.NewStateDir(o.Progress)
	if err != nil {
		return err
	}
	// A directory left behind is swept by the next sandbox.
	defer func() { _ = state.Remove() }()
	if err := os.Setenv("TMPDIR", state.Dir); err != nil {
		return err
	}
	if *dir == "" {
		*dir = state.Dir
	} else {
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			return err
		}
		abs, err := filepath.Abs(*dir)
		if err != nil {
			return err
		}
		*dir = abs
		if err := state.RecordKubeconfig(filepath.Join(abs, "kubeconfig")); err != nil {
			return err
		}
	}
	o.Dir = *dir

	// The operator's log goes to a file: the terminal is for the report.
	logFile, err := os.Create(filepath.Join(o.Dir, "operator.log"))
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	logger := zap.New(zap.WriteTo(logFile))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)

	return sandbox.Run(ctx, o)
}
