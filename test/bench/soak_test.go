package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// The soak's shape (issue 18, part 5).
const (
	soakMinLife, soakMaxLife = 10, 60 // a pod's lifetime, seconds
	soakEditShare            = 10     // one pod in this many gets its annotation edited
	soakNodes                = 6      // nodes a NodeENI selects by label
	soakFlipEvery            = 20 * time.Second
	// A deleted pod's ENI goes back to the pool once the emulator shows
	// it untagged and at least this long after the pod went: a new pod
	// on an ENI still carrying the old pod's tags would measure the
	// bench's hurry, not the operator.
	soakRest      = 20 * time.Second
	soakNodeLabel = "role"
	soakNodeENI   = "soak"
	soakSettle    = 5 * time.Minute
)

// soakTagKeys are every key soakTags writes and the tagger's ownership
// token: an ENI carrying any of them carries some pod's tags.
var soakTagKeys = []string{"App", "Team", "CostCenter", "Env", tagger.HashTag}

// soakTags is pod i's annotation after edit edits: the first changes
// Team, adds Env and removes CostCenter; later ones change Team and
// add or remove Env.
func soakTags(i, edit int) string {
	tags := []string{fmt.Sprintf("App=app-%d", i%20), fmt.Sprintf("Team=team-%d", (i+edit)%5)}
	switch {
	case edit == 0:
		tags = append(tags, fmt.Sprintf("CostCenter=%d", 1000+i%20))
	case edit%2 == 1:
		tags = append(tags, fmt.Sprintf("Env=env-%d", edit))
	}
	return strings.Join(tags, ",")
}

// parseSoakTags reads soakTags's format back ("k=v,k=v"): the bench's
// own reading of what it wrote, not the operator's parser.
func parseSoakTags(s string) map[string]string {
	out := map[string]string{}
	for kv := range strings.SplitSeq(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// TestFigureSoak: BENCH_SOAK (30m with `make bench-soak`) of churn at
// BENCH_SOAK_RATE pods/s (50), each pod on a branch ENI of a pool and
// deleted after 10-60 s, one in ten with its annotation edited, and a
// NodeENI over six nodes whose labels flip every 20 s; the operator's
// memory, goroutines, ledger and inventory age every 10 s; then churn
// stops and the end state is checked from the emulator and the API
// server.
func TestFigureSoak(t *testing.T) {
	d := soakDuration(t)
	rate := envInt(t, "BENCH_SOAK_RATE", 50)
	// Living pods (at most rate x 60 s) and resting ENIs (rate x ~30 s),
	// with room.
	pool := rate * (soakMaxLife + 50)
	w := branchENIs(pool)
	for i := range soakNodes {
		w.Instances = append(w.Instances, emulator.InstanceSpec{Type: "m5.xlarge", Subnet: []string{"nodes-a", "nodes-b"}[i%2]})
	}
	b := newBed(t, w)
	b.createSoakNodes()
	t.Cleanup(b.removeNodeENIs) // after the operator stopped
	flags := os.Getenv("BENCH_OPERATOR_FLAGS")
	b.startOperator(strings.Fields(flags)...)
	if err := b.k8s.Create(context.Background(), &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: soakNodeENI},
		Spec: v1alpha1.NodeENISpec{NodeSelector: map[string]string{soakNodeLabel: "multus"}, SubnetNames: []string{"multus-a", "multus-b"},
			SecurityGroupNames: []string{"multus"}, DeviceIndex: 1}}); err != nil {
		t.Fatal(err)
	}
	b.waitFor("first inventory refresh", time.Minute, func() bool { c, _ := b.calls(); return c["DescribeNetworkInterfaces"] > 0 })
	b.emu.ResetCounts()
	s := b.startSoakSampler()
	c := newChurn(b, rate, b.loaded.NetworkInterfaces[:pool])
	b.sampler.mark("churn")
	s.mark("churn")
	c.run(d)
	b.sampler.mark("churn stopped")
	s.mark("churn stopped")
	ev, settled := b.settleSoak(c)
	s.halt()
	calls, total := b.calls()
	calls["DescribeNetworkInterfaces"] -= int(c.ownReads.Load())
	total -= int(c.ownReads.Load())
	b.write(Figure{Name: "9-soak",
		Parameters: map[string]any{"duration": d.String(), "podsPerSecond": rate, "podLifetime": fmt.Sprintf("%d-%d s", soakMinLife, soakMaxLife),
			"annotationEdits": fmt.Sprintf("1 pod in %d", soakEditShare), "nodeENINodes": soakNodes, "labelFlipEvery": soakFlipEvery.String(),
			"branchENIPool": pool, "sampleEvery": soakSampleEvery.String(), "operatorFlags": "defaults " + flags},
		Results: c.results(ev, settled, total), Checks: s.checks(ev, rate), Charts: s.charts(), EC2Calls: calls,
		Notes: append([]string{"goroutines and Go heap are the Go runtime's figures from the operator's /metrics; RSS from /proc; " +
			"ledger from its ConfigMaps in the API server; inventory age from the emulator's call log"}, ev.examples...)})
	ev.fail(t)
}

// soakDuration is BENCH_SOAK; the figure is skipped without it (it is
// longer than the rest of `make bench` together).
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("BENCH_SOAK")
	if v == "" {
		t.Skip("the soak runs with `make bench-soak` (30 minutes) or BENCH_SOAK=<duration>, e.g. `make bench FIGURE=Soak BENCH_SOAK=3m`")
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Minute {
		t.Fatalf("BENCH_SOAK=%q: want a duration of at least 1m, such as 30m", v)
	}
	return d
}

// createSoakNodes creates the nodes of the world's instances, the first
// two thirds selected by the NodeENI's label.
func (b *bed) createSoakNodes() {
	for i, inst := range b.loaded.Instances {
		zone := []string{"us-east-1a", "us-east-1b"}[i%2]
		labels := map[string]string{corev1.LabelTopologyZone: zone}
		if i < 2*soakNodes/3 {
			labels[soakNodeLabel] = "multus"
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("soak-node-%d", i), Labels: labels},
			Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("aws:///%s/%s", zone, inst.ID)}}
		if err := b.k8s.Create(context.Background(), n); err != nil {
			b.t.Fatal(err)
		}
	}
}

// churn is the soak's load: pods on a pool of branch ENIs, annotation
// edits, node label flips.
type churn struct {
	b    *bed
	rate int
	free chan emulator.LoadedENI

	mu      sync.Mutex
	live    map[string]*soakPod // name -> living pod
	resting []restingENI        // ENIs of deleted pods, not yet back in free

	created, deleted, edits, flips, errs, poolDry, ownReads atomic.Int64
	wg                                                      sync.WaitGroup
	createLat                                               []time.Duration
	churned                                                 time.Duration
}

type soakPod struct{ i, edits int }

type restingENI struct {
	eni   emulator.LoadedENI
	since time.Time
}

func newChurn(b *bed, rate int, enis []emulator.LoadedENI) *churn {
	c := &churn{b: b, rate: rate, free: make(chan emulator.LoadedENI, len(enis)), live: map[string]*soakPod{}}
	for _, e := range enis {
		c.free <- e
	}
	return c
}

// run churns for d: it creates pods at c.rate per second until d is
// over, and edits, flips and recycles ENIs meanwhile; pods alive at the
// end stay.
func (c *churn) run(d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	var bg sync.WaitGroup
	for _, f := range []func(context.Context){c.editLoop, c.flipLoop, c.recycleLoop} {
		bg.Go(func() { f(ctx) })
	}
	tick := time.NewTicker(time.Second / time.Duration(c.rate))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			c.wg.Wait()
			bg.Wait()
			c.churned = time.Since(start)
			return
		case <-tick.C:
		}
		var e emulator.LoadedENI
		select {
		case e = <-c.free:
		default:
			c.poolDry.Add(1)
			select {
			case e = <-c.free:
			case <-ctx.Done():
				continue
			}
		}
		c.wg.Go(func() { c.life(ctx, i, e) })
	}
}

// life is one pod's: created Running on e's IP, deleted after its
// lifetime unless the churn stops first.
func (c *churn) life(ctx context.Context, i int, e emulator.LoadedENI) {
	name := fmt.Sprintf("soak-%07d", i)
	p := c.b.newPod(name, map[string]string{"eni-tagger.io/tags": soakTags(i, 0)})
	start := time.Now()
	// Not ctx: a pod being created as the churn stops is created whole.
	if err := c.b.k8s.Create(context.Background(), p); err != nil {
		c.errs.Add(1)
		c.free <- e
		return
	}
	unset := p.DeepCopy()
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: e.PrivateIP, PodIPs: []corev1.PodIP{{IP: e.PrivateIP}}}
	if err := c.b.k8s.Status().Patch(context.Background(), p, client.StrategicMergeFrom(unset)); err != nil {
		c.errs.Add(1)
	}
	c.created.Add(1)
	c.mu.Lock()
	c.createLat = append(c.createLat, time.Since(start))
	c.live[name] = &soakPod{i: i}
	c.mu.Unlock()
	life := time.Duration(soakMinLife+rand.IntN(soakMaxLife-soakMinLife+1)) * time.Second
	select {
	case <-ctx.Done():
		return // churn over: the pod stays, and its tags with it
	case <-time.After(life):
	}
	c.mu.Lock()
	delete(c.live, name)
	c.mu.Unlock()
	if err := c.b.k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
		c.errs.Add(1)
	}
	c.deleted.Add(1)
	c.mu.Lock()
	c.resting = append(c.resting, restingENI{eni: e, since: time.Now()})
	c.mu.Unlock()
}

// editLoop edits the annotation of rate/soakEditShare living pods a
// second.
func (c *churn) editLoop(ctx context.Context) {
	every(ctx, time.Second*soakEditShare/time.Duration(c.rate), func(int) { c.edit(ctx) })
}

// edit edits the annotation of one living pod.
func (c *churn) edit(ctx context.Context) {
	c.mu.Lock()
	var name string
	var sp *soakPod
	for name, sp = range c.live { // a map's order: any living pod
		break
	}
	var ann string
	if sp != nil {
		sp.edits++
		ann = soakTags(sp.i, sp.edits)
	}
	c.mu.Unlock()
	if sp == nil {
		return
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"eni-tagger.io/tags":%q}}}`, ann)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.b.ns}}
	err := c.b.k8s.Patch(ctx, p, client.RawPatch("application/merge-patch+json", patch))
	switch {
	case err == nil:
		c.edits.Add(1)
	case !apierrors.IsNotFound(err) && ctx.Err() == nil:
		c.errs.Add(1)
	}
}

// flipLoop flips one node's label every soakFlipEvery, in turn: the
// NodeENI's ENI is created and attached, or detached and deleted.
func (c *churn) flipLoop(ctx context.Context) {
	every(ctx, soakFlipEvery, func(k int) {
		var n corev1.Node
		if err := c.b.k8s.Get(ctx, client.ObjectKey{Name: fmt.Sprintf("soak-node-%d", k%soakNodes)}, &n); err != nil {
			c.errs.Add(1)
			return
		}
		unset := n.DeepCopy()
		if _, on := n.Labels[soakNodeLabel]; on {
			delete(n.Labels, soakNodeLabel)
		} else {
			n.Labels[soakNodeLabel] = "multus"
		}
		if err := c.b.k8s.Patch(ctx, &n, client.MergeFrom(unset)); err != nil {
			c.errs.Add(1)
			return
		}
		c.flips.Add(1)
	})
}

// every runs f every period until ctx ends; f is told how many runs
// came before.
func every(ctx context.Context, period time.Duration, f func(k int)) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for k := 0; ; k++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f(k)
	}
}

// recycleLoop returns rested ENIs to the pool every 5 s once the
// emulator shows them without any pod's tags.
func (c *churn) recycleLoop(ctx context.Context) {
	every(ctx, 5*time.Second, func(int) { c.recycle(ctx) })
}

// recycle returns the rested ENIs the emulator shows untagged to the
// pool.
func (c *churn) recycle(ctx context.Context) {
	c.mu.Lock()
	n := 0
	for n < len(c.resting) && time.Since(c.resting[n].since) >= soakRest {
		n++
	}
	c.mu.Unlock()
	if n == 0 {
		return
	}
	tagged, err := c.taggedENIs(ctx)
	if err != nil {
		return
	}
	c.mu.Lock()
	keep := c.resting[:0]
	for i, r := range c.resting {
		if i < n && !tagged[r.eni.ID] {
			c.free <- r.eni
			continue
		}
		keep = append(keep, r)
	}
	c.resting = keep
	c.mu.Unlock()
}

// taggedENIs are the ENIs carrying any of soakTagKeys, as the emulator
// describes them.
func (c *churn) taggedENIs(ctx context.Context) (map[string]bool, error) {
	enis, err := c.list(ctx, ec2.Filter{Name: "tag-key", Values: soakTagKeys})
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(enis))
	for _, e := range enis {
		out[e.ID] = true
	}
	return out, nil
}

// list reads ENIs with the bench's own client, counting its calls (a
// page holds up to 1,000 ENIs) to tell them from the operator's.
func (c *churn) list(ctx context.Context, f ec2.Filter) ([]awstypes.ENI, error) {
	enis, err := c.b.ec2().ListENIs(ctx, f)
	c.ownReads.Add(int64(1 + len(enis)/1000))
	return enis, err
}

func (c *churn) results(ev soakEvidence, settled time.Duration, ec2Total int) map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	secs := c.churned.Seconds()
	return map[string]any{"podsCreated": c.created.Load(), "podsDeleted": c.deleted.Load(), "achievedPodsPerSecond": float64(c.created.Load()) / secs,
		"annotationEdits": c.edits.Load(), "labelFlips": c.flips.Load(), "benchErrors": c.errs.Load(), "poolEmptyWaits": c.poolDry.Load(),
		"p50PodCreate": percentile(c.createLat, 50).Round(time.Millisecond).String(), "p99PodCreate": percentile(c.createLat, 99).Round(time.Millisecond).String(),
		"churnSeconds": secs, "secondsToSettle": settled.Seconds(), "ec2CallsPerPod": float64(ec2Total) / float64(max(1, c.created.Load())),
		"podsLivingAtEnd": ev.livePods, "ledgerRecordsAtEnd": ev.ledgerRecords, "tagsLeftBehind": ev.leftBehind, "wrongTags": ev.wrongTags,
		"leakedENIs": ev.leaked, "missingNodeENIs": ev.missing, "nodeENIENIs": ev.nodeENIs}
}
