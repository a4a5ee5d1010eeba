// Package sandbox runs the whole system on one machine with no cluster
// and no AWS account: a real etcd + kube-apiserver (internal/kit/controlplane,
// with the binaries hack/control-plane-binaries.sh builds), the
// EC2 emulator seeded with a demo world, Node objects for the world's
// instances, the operator as internal/operator wires it with
// eni-operator's default flags (the few the sandbox sets are reported)
// and as its ServiceAccount under config/rbac's RBAC and admission
// policies (the chart's),
// demo pods and a NodeENI, and a secondary network: a NodeENI for Multus
// with a pod on it (Multus' CRD installed, its part played by the
// sandbox). It reports what the operator did as
// tables and keeps running for a person to experiment, until its context
// ends.
package sandbox

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/cachedbin"
	"github.com/eni-operator/eni-operator/internal/kit/controlplane"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/operator"
)

// ClusterName is the cluster name the sandbox's operator runs with.
const ClusterName = "sandbox"

// Options configure a sandbox run.
type Options struct {
	// Root is the repository root (config/, hack/).
	Root string
	// Dir holds the run's files (kubeconfig, operator log). It must exist.
	Dir string
	// WorldFile is the emulator's world (default hack/demo/world.json).
	WorldFile string
	// NodeENIFile is the NodeENI applied (default
	// config/samples/nodeeni-subnet-names.yaml).
	NodeENIFile string
	// EmulatorListen is the emulator's address (port 0 picks one).
	EmulatorListen string
	// Timeout bounds the wait for pods Synced and the NodeENI Ready.
	Timeout time.Duration
	// Once returns after the report instead of waiting for ctx.
	Once bool
	// Out receives the report; Progress the progress lines.
	Out, Progress io.Writer
	// Version is the operator version reported.
	Version string
	// OperatorAsAdmin runs the operator with the administrator's
	// credentials, as the sandbox did before it applied config/rbac.
	OperatorAsAdmin bool
}

func (o *Options) defaults() {
	if o.WorldFile == "" {
		o.WorldFile = filepath.Join(o.Root, "hack", "demo", "world.json")
	}
	if o.NodeENIFile == "" {
		o.NodeENIFile = filepath.Join(o.Root, "config", "samples", "nodeeni-subnet-names.yaml")
	}
	if o.EmulatorListen == "" {
		o.EmulatorListen = "127.0.0.1:4566"
	}
	if o.Timeout == 0 {
		o.Timeout = 3 * time.Minute
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Progress == nil {
		o.Progress = os.Stderr
	}
}

// Run starts everything, applies the demo, reports, and then (unless
// Once) waits for ctx to end. Whatever it started is stopped before it
// returns, on every path: the control plane's processes included.
func Run(ctx context.Context, o Options) (err error) {
	o.defaults()
	say := o.say
	ln, err := listenEmulator(o.EmulatorListen)
	if err != nil {
		return err
	}
	defer func() { _ = ln.Close() }()
	say("control plane binaries (kube-apiserver, etcd, kubectl): built from the Go module proxy on first use, then cached")
	assets, err := cachedbin.ControlPlane(ctx, o.Root, o.Progress)
	if ctx.Err() != nil {
		say("interrupted")
		return nil
	}
	if err != nil {
		return err
	}

	say("starting etcd and kube-apiserver (they die with the sandbox, even on SIGKILL), installing the CRDs and Multus' NetworkAttachmentDefinition CRD (%s; Multus itself is not installed)", rel(o.Root, nadCRD(o.Root)))
	cp, kubeconfig, err := startControlPlane(ctx, o, assets)
	if err != nil {
		return err
	}
	defer func() {
		say("stopping kube-apiserver and etcd")
		if stopErr := cp.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stopping the control plane: %w", stopErr)
		}
	}()
	// Administrator credentials: removed at exit even when Dir is kept
	// (--dir), and by the next sandbox should this one be killed.
	defer func() { _ = os.Remove(kubeconfig) }()

	emu, err := startEmulator(o, ln)
	if err != nil {
		return err
	}
	defer emu.stop(say)
	reader, err := emu.client(ctx)
	if err != nil {
		return err
	}
	k8s, err := newClient(cp.Admin())
	if err != nil {
		return err
	}
	ne, err := readNodeENI(o.NodeENIFile)
	if err != nil {
		return err
	}
	say("creating Node objects for the emulator's instances, labelled %v to match NodeENI %s", ne.Spec.NodeSelector, ne.Name)
	nodes, err := createNodes(ctx, k8s, reader, emu.loaded, ne.Spec.NodeSelector)
	if err != nil {
		return err
	}

	op, err := startOperatorAs(ctx, o, cp.Admin(), k8s, emu.loaded.VPCs[0])
	if err != nil {
		return err
	}
	defer op.stop(say, &err)
	say("node agent: not started — it configures host interfaces (netlink, sysfs) and needs root and the nodes' real NICs; the sandbox has neither")

	say("applying the demo: namespace %s, %d pods with tag annotations, NodeENI %s from %s", demoNamespace, len(demoPods()), ne.Name, rel(o.Root, o.NodeENIFile))
	d := demoEnv{k8s: k8s, reader: reader, nodes: nodes, timeout: o.Timeout, say: say}
	then, err := d.apply(ctx, ne)
	if err != nil {
		return err
	}
	if interrupted, err := converge(ctx, o, d, op, then); interrupted || err != nil {
		return err
	}
	if o.Once {
		return nil
	}
	printAccess(o.Out, accessInfo{kubeconfig: kubeconfig, kubectl: filepath.Join(assets, "kubectl"), endpoint: emu.endpoint,
		metrics: op.metricsAddr, probe: op.probe, log: filepath.Join(o.Dir, "operator.log"), apiserver: cp.Host, flags: op.changes, identity: op.identity})
	return op.wait(ctx, o)
}

// startControlPlane starts etcd and kube-apiserver with the CRDs
// installed, in a temporary directory (TMPDIR is the state directory),
// and writes an administrator's kubeconfig into Dir.
func startControlPlane(ctx context.Context, o Options, assets string) (*controlplane.ControlPlane, string, error) {
	cp, err := controlplane.Start(ctx, controlplane.Options{Bins: assets,
		CRDDirs: []string{filepath.Join(o.Root, "config", "crd", "bases"), nadCRD(o.Root)}})
	if err != nil {
		return nil, "", err
	}
	path := filepath.Join(o.Dir, "kubeconfig")
	kc, err := cp.Kubeconfig("admin", "system:masters")
	if err == nil {
		err = os.WriteFile(path, kc, 0o600)
	}
	if err != nil {
		_ = os.Remove(path)
		_ = cp.Stop()
		return nil, "", err
	}
	return cp, path, nil
}

// nadCRD is the minimal NetworkAttachmentDefinition CRD the sandbox
// installs in Multus' stead.
func nadCRD(root string) string {
	return filepath.Join(root, "hack", "demo", "network-attachment-definitions.yaml")
}

// say writes one progress line.
func (o *Options) say(format string, a ...any) { fmt.Fprintf(o.Progress, "» "+format+"\n", a...) }

// converge waits for the demo to converge, then runs then (unless nil),
// and prints what the operator did (also when it did not converge in
// time, then with the error). interrupted: ctx ended while it waited,
// and the run ends without error.
func converge(ctx context.Context, o Options, d demoEnv, op *operatorRun, then func(context.Context) error) (interrupted bool, err error) {
	k8s, reader := d.k8s, d.reader
	err = waitConverged(ctx, k8s, o.Timeout, o.say)
	if err == nil && then != nil {
		err = then(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			o.say("interrupted: shutting down")
			return true, nil
		}
		select {
		case opErr := <-op.done:
			return false, fmt.Errorf("the operator stopped: %v", opErr)
		default:
		}
		if r, rerr := collect(ctx, k8s, reader); rerr == nil {
			r.print(o.Out)
		}
		return false, err
	}
	r, err := collect(ctx, k8s, reader)
	if err != nil {
		return false, err
	}
	r.print(o.Out)
	return false, nil
}

// emulatorRun is the EC2 emulator serving the demo world.
type emulatorRun struct {
	loaded   emulator.LoadResult
	endpoint string
	srv      *http.Server
}

// listenEmulator takes the emulator's address before anything else is
// built or started, so a port in use is said at once.
func listenEmulator(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("EC2 emulator: %w (another sandbox or emulator running? choose a free address with --emulator-listen, port 0 picks one)", err)
	}
	return ln, nil
}

// startEmulator loads the world into a new emulator and serves it on
// ln (o.EmulatorListen).
func startEmulator(o Options, ln net.Listener) (*emulatorRun, error) {
	o.say("starting the EC2 emulator with %s", rel(o.Root, o.WorldFile))
	emu := emulator.New(emulator.Options{Region: region})
	loaded, err := loadWorld(emu, o.WorldFile)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: emu, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &emulatorRun{loaded: loaded, endpoint: "http://" + ln.Addr().String(), srv: srv}, nil
}

func (e *emulatorRun) stop(say func(string, ...any)) {
	say("stopping the EC2 emulator")
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.srv.Shutdown(shutdown)
}

// client points the process's AWS environment at the emulator and
// returns the EC2 client the report reads with. The operator finds the
// emulator the way it finds AWS: the standard environment of every AWS
// SDK. Nothing in it knows it is emulated.
func (e *emulatorRun) client(ctx context.Context) (*ec2.Client, error) {
	for k, v := range awsEnv(e.endpoint) {
		if err := os.Setenv(k, v); err != nil {
			return nil, err
		}
	}
	reader, err := ec2.New(ctx, ec2.Config{VPCID: e.loaded.VPCs[0], QPS: 100, Burst: 100})
	if err != nil {
		return nil, fmt.Errorf("EC2 client for the report: %w", err)
	}
	return reader, nil
}

// operatorRun is the operator's manager running in this process.
type operatorRun struct {
	probe, metricsAddr string
	changes            []flagChange
	// identity is who the operator is to the API server (describeIdentity).
	identity string
	done     chan error
	cancel   context.CancelFunc
}

// startOperator starts the operator with eni-operator's defaults and the
// flags the sandbox sets (reported). It runs until stopped, not until
// ctx ends, so the deferred stop can report how it ended.
func startOperator(ctx context.Context, o Options, restCfg *rest.Config, vpc string) (*operatorRun, error) {
	probe, metricsAddr := freeAddr(), freeAddr()
	if probe == "" || metricsAddr == "" {
		return nil, errors.New("no free local port for the operator's endpoints")
	}
	oc, changes, err := operatorConfig(vpc, metricsAddr, probe, o.Version)
	if err != nil {
		return nil, err
	}
	o.say("operator flags: eni-operator's defaults, except:")
	for _, c := range changes {
		o.say("  %s", c)
	}
	o.say("starting the operator (pod tagger, NodeENI controller, ENI collector)")
	opCtx, stopOperator := context.WithCancel(context.WithoutCancel(ctx))
	mgr, err := operator.NewManager(opCtx, restCfg, oc)
	if err != nil {
		stopOperator()
		return nil, fmt.Errorf("operator: %w", err)
	}
	op := &operatorRun{probe: probe, metricsAddr: metricsAddr, changes: changes, done: make(chan error, 1), cancel: stopOperator}
	go func() { op.done <- mgr.Start(opCtx) }()
	return op, nil
}

// stop stops the operator and waits (a minute at most) for it to end; its
// error becomes *err unless *err is set already.
func (op *operatorRun) stop(say func(string, ...any), err *error) {
	say("stopping the operator")
	op.cancel()
	select {
	case opErr := <-op.done:
		if opErr != nil && *err == nil {
			*err = fmt.Errorf("operator: %w", opErr)
		}
	case <-time.After(time.Minute):
		if *err == nil {
			*err = errors.New("the operator did not stop within a minute")
		}
	}
}

// wait keeps the sandbox running until ctx ends (nil) or the operator
// stops on its own (an error).
func (op *operatorRun) wait(ctx context.Context, o Options) error {
	fmt.Fprintln(o.Out, "Running. Press Ctrl-C to stop everything.")
	select {
	case <-ctx.Done():
		fmt.Fprintln(o.Progress)
		o.say("interrupted: shutting down")
		return nil
	case opErr := <-op.done:
		op.done <- opErr // for the deferred stop
		return fmt.Errorf("the operator stopped: %v", opErr)
	}
}

// region is the emulated AWS region.
const region = "us-east-1"

// awsEnv is the standard AWS SDK environment pointing at the emulator.
func awsEnv(endpoint string) map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_EC2": endpoint, "AWS_REGION": region, "AWS_DEFAULT_REGION": region,
		"AWS_ACCESS_KEY_ID": "sandbox", "AWS_SECRET_ACCESS_KEY": "sandbox",
		// No instance metadata service here: do not wait for one.
		"AWS_EC2_METADATA_DISABLED": "true",
	}
}

// flagChange is an operator flag the sandbox sets, and why.
type flagChange struct {
	Flag, Value, Why string
	// Deviation marks a change of behaviour from production, as opposed
	// to a setting every installation makes (addresses, names).
	Deviation bool
}

func (c flagChange) String() string {
	s := fmt.Sprintf("--%s=%s (%s)", c.Flag, c.Value, c.Why)
	if c.Deviation {
		s = "changed from production defaults: " + s
	}
	return s
}

// operatorConfig is the configuration eni-operator builds from its
// command line (operator.DefaultConfig and the same flags), given the
// flags the sandbox sets, which it returns to be reported: every interval,
// rate limit and switch keeps eni-operator's default.
func operatorConfig(vpc, metricsAddr, probeAddr, version string) (operator.Config, []flagChange, error) {
	changes := []flagChange{
		{Flag: "cluster-name", Value: ClusterName, Why: "the NodeENI controller and the collector need one; a cluster sets its own"},
		{Flag: "vpc-id", Value: vpc, Why: "the emulator's VPC; in AWS it comes from instance metadata, which the sandbox does not emulate"},
		{Flag: "cache-namespace", Value: operatorNamespace, Why: "the operator's namespace; in a cluster $POD_NAMESPACE says it"},
		{Flag: "metrics-bind-address", Value: metricsAddr, Why: "a free loopback port instead of :8090"},
		{Flag: "health-probe-bind-address", Value: probeAddr, Why: "a free loopback port instead of :8081"},
		{Flag: "metrics-secure", Value: "false", Deviation: true,
			Why: "plain HTTP on loopback so you can curl it; in a cluster /metrics is HTTPS for authorised readers only"},
	}
	c := operator.DefaultConfig()
	c.Version = version
	fs := flag.NewFlagSet("eni-operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.BindFlags(fs)
	args := make([]string, 0, len(changes))
	for _, ch := range changes {
		args = append(args, "--"+ch.Flag+"="+ch.Value)
	}
	if err := fs.Parse(args); err != nil {
		return c, nil, fmt.Errorf("operator flags %q: %w", args, err)
	}
	if err := c.Validate(); err != nil {
		return c, nil, err
	}
	return c, changes, nil
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ""
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String()
}

func newClient(cfg *rest.Config) (client.Client, error) {
	s, err := operator.Scheme()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: s})
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return r
	}
	return path
}
