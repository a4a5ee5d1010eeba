package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// lagged turns on every eventual-consistency delay the emulator models.
// The tag delay is longer than the tagger's inventory interval (2s), so
// refreshes read tags from before the operator's own writes.
func (w *world) lagged() {
	d := func(v time.Duration) *emulator.Duration { return &emulator.Duration{Duration: v} }
	if err := w.ec2.Emulator.Configure(emulator.Config{VisibilityDelay: d(1500 * time.Millisecond), TagDelay: d(3 * time.Second),
		AttachDelay: d(time.Second), DeleteDelay: d(2 * time.Second)}); err != nil {
		w.t.Fatal(err)
	}
}

// tagWrites counts, per ENI, the successful calls of action naming it in
// the emulator's call log (one call can name several ENIs). Failed calls
// are retries, not thrash (this test injects no faults anyway).
func tagWrites(calls []emulator.Call, action string) map[string]int {
	ok := map[string]int{}
	for _, c := range calls {
		if c.Action != action || c.Code != "" {
			continue
		}
		for k, v := range c.Params {
			if strings.HasPrefix(k, "ResourceId.") {
				for _, id := range v {
					ok[id]++
				}
			}
		}
	}
	return ok
}

// thrash lists the pods whose ENI got more successful CreateTags calls
// than want(i) (the desired changes the pod went through).
func (w *world) thrash(calls []emulator.Call, want func(i int) int) []string {
	ok := tagWrites(calls, "CreateTags")
	var out []string
	for i, e := range w.podENIs {
		if ok[e.ID] > want(i) {
			out = append(out, fmt.Sprintf("p-%03d: %d CreateTags on %s, want at most %d", i, ok[e.ID], e.ID, want(i)))
		}
	}
	return out
}

// createdENIs counts successful CreateNetworkInterface calls by their
// ClientToken: a token answered twice is a replay (the same ENI).
func createdENIs(calls []emulator.Call) (made, tokens int) {
	seen := map[string]bool{}
	for _, c := range calls {
		if c.Action == "CreateNetworkInterface" && c.Code == "" {
			made++
			seen[strings.Join(c.Params["ClientToken"], "")] = true
		}
	}
	return made, len(seen)
}

// TestEventualConsistency: every delay on (a new ENI unseen, tags,
// attachments and deletes described late). 200 pods and 20 nodes x 2
// NodeENIs converge with one CreateTags per pod ENI; 20 pods change their
// annotation, one more each; a third NodeENI is added while the operator
// is killed at random points during the lag, and no second ENI is made
// for any (NodeENI, node); pods deleted lose their tags. Every count comes
// from the emulator's call log, every state from EC2 and the API server.
func TestEventualConsistency(t *testing.T) {
	env := testenv.StartForTest(t)
	w := newWorld(t, env.Config)
	w.lagged()
	start := time.Now()
	w.createPods()
	op := w.start(env.Config)
	// The pods that change their annotation later are not at their final
	// tags yet.
	unchanged := func(p string) bool { return !changedPod(p) }
	w.convergeExcept(2*time.Minute, unchanged)
	// Tag writes show up 3s late: a refresh in between must not make the
	// operator write them again. Wait out a few more refreshes first.
	time.Sleep(5 * time.Second)
	w.convergeExcept(time.Minute, unchanged)
	calls := w.ec2.Emulator.Calls()
	if bad := w.thrash(calls, func(int) int { return 1 }); len(bad) > 0 {
		t.Errorf("tag thrash: %d pods' ENIs written more than once:\n%s", len(bad), strings.Join(bad[:min(len(bad), 10)], "\n"))
	}
	n, tokens := createdENIs(calls)
	t.Logf("converged in %v with every delay on: %d CreateTags, %d CreateNetworkInterface (%d tokens), %d AttachNetworkInterface",
		time.Since(start).Round(time.Second), w.ec2.Emulator.Counts()["CreateTags"].Calls, n, tokens,
		w.ec2.Emulator.Counts()["AttachNetworkInterface"].Calls)

	for i := 150; i < 170; i++ {
		w.annotate(fmt.Sprintf("p-%03d", i), fmt.Sprintf("App=changed,Team=team-%d", i%3))
	}
	w.converge(time.Minute)
	time.Sleep(5 * time.Second)
	w.converge(time.Minute)
	if bad := w.thrash(w.ec2.Emulator.Calls(), func(i int) int { return 1 + b2i(changed(i)) }); len(bad) > 0 {
		t.Errorf("tag thrash after annotation changes:\n%s", strings.Join(bad[:min(len(bad), 10)], "\n"))
	}

	w.ec2Outage()
	w.crashWhileCreating(env.Config, op)
	w.deletePodsLagged()
}

// ec2Outage makes EC2 unreachable for outageLength while 10 pods change
// their annotation, then brings it back: the operator recovers without a
// restart, the changes are all made, and its tag writes never exceed
// AWS's bucket, which the client keeps to (checked from the emulator's
// call log). Time is shrunk: 10s here for AWS's minutes (the
// operator's backoff is capped at 200ms in start, so 10s spans many
// capped retries); internal/ec2 TestLongOutage runs the client alone
// through a real ten-minute outage with EC2_OUTAGE=10m.
func (w *world) ec2Outage() {
	t := w.t
	const outageLength = 10 * time.Second
	down := true
	if err := w.ec2.Emulator.Configure(emulator.Config{Down: &down}); err != nil {
		t.Fatal(err)
	}
	w.ec2.Emulator.ResetCounts()
	for i := 150; i < 160; i++ {
		w.annotate(fmt.Sprintf("p-%03d", i), fmt.Sprintf("App=back,Team=team-%d", i%3))
	}
	time.Sleep(outageLength)
	down = false
	if err := w.ec2.Emulator.Configure(emulator.Config{Down: &down}); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	testenv.EventuallyEvery(t, "the changes made during the outage", 2*time.Minute, time.Second, func() (bool, string) {
		all, wrong := w.eniState(), 0
		for i := 150; i < 160; i++ {
			if all[w.podENIs[i].ID].Tags["App"] != "back" {
				wrong++
			}
		}
		return wrong == 0, fmt.Sprintf("%d of 10 pods' ENIs without their new tags", wrong)
	})
	calls := w.ec2.Emulator.Calls()
	unreachable := 0
	for _, c := range calls {
		if c.Code == "Unreachable" {
			unreachable++
		}
	}
	t.Logf("EC2 down %v: %d calls met the outage; the changes were made %v after it came back", outageLength, unreachable,
		time.Since(back).Round(time.Second))
	if unreachable == 0 {
		t.Error("no call met the outage: it was not exercised")
	}
	// The test's own reads (eniState) are in the log too, so only the
	// operator's writes are checked: against AWS's tag bucket, which the
	// client keeps to per action.
	tags := ec2.AWSBucket(ec2.FamilyTags)
	for _, action := range []string{"CreateTags", "DeleteTags"} {
		if v := (emulator.Bucket{Size: float64(tags.Burst), Refill: tags.Refill}).Overrun(calls, action); v != "" {
			t.Errorf("the operator's %s calls exceeded AWS's bucket %+v: %s", action, tags, v)
		}
	}
	for i := 150; i < 160; i++ {
		w.annotate(fmt.Sprintf("p-%03d", i), fmt.Sprintf("App=changed,Team=team-%d", i%3))
	}
	w.converge(time.Minute)
}

// changedPod tells whether a problem is about one of the pods whose
// annotation changes (check's desired tags are their final ones).
func changedPod(problem string) bool {
	var i int
	_, err := fmt.Sscanf(problem, "pod p-%03d:", &i)
	return err == nil && changed(i)
}

// convergeExcept waits until check finds no problem that keep keeps.
func (w *world) convergeExcept(timeout time.Duration, keep func(problem string) bool) {
	w.t.Helper()
	testenv.EventuallyEvery(w.t, "convergence", timeout, time.Second, func() (bool, string) {
		problems := slices.DeleteFunc(w.check(), func(p string) bool { return !keep(p) })
		return len(problems) == 0, "\n" + strings.Join(problems[:min(len(problems), 10)], "\n")
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// crashWhileCreating adds a NodeENI and kills the operator at random
// points of the following seconds, while new ENIs are still unseen by
// other calls; then checks that each (NodeENI, node) got one ENI.
func (w *world) crashWhileCreating(cfg *rest.Config, op *testenv.Manager) {
	t := w.t
	_ = op.Stop()
	w.ec2.Emulator.ResetCounts()
	if err := w.k8s.Create(context.Background(), &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: "late"},
		Spec: v1alpha1.NodeENISpec{NodeSelector: map[string]string{"role": "multus"}, SubnetNames: []string{"multus-a", "multus-b"},
			SecurityGroupNames: []string{"multus"}, DeviceIndex: 3}}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 6 {
		o := w.start(cfg)
		time.Sleep(time.Duration(300+rng.IntN(900)) * time.Millisecond)
		_ = o.Stop()
	}
	final := w.start(cfg)
	t.Cleanup(func() { _ = final.Stop() })
	testenv.EventuallyEvery(t, "NodeENI late converged", 2*time.Minute, time.Second, func() (bool, string) {
		late := w.lateENIs()
		var bad []string
		for n := range nodes {
			if got := late[testenv.NodeName(n)]; len(got) != 1 || !strings.HasSuffix(got[0], "/attached") {
				bad = append(bad, fmt.Sprintf("%s: %v", testenv.NodeName(n), got))
			}
		}
		problems := slices.DeleteFunc(w.check(), func(p string) bool { return strings.Contains(p, " for late/") })
		return len(bad) == 0 && len(problems) == 0, fmt.Sprintf("late ENIs not one attached per node: %v; %v", bad, problems)
	})
	calls := w.ec2.Emulator.Calls()
	if bad := w.thrash(calls, func(int) int { return 0 }); len(bad) > 0 {
		t.Errorf("restarts rewrote settled tags:\n%s", strings.Join(bad[:min(len(bad), 10)], "\n"))
	}
	// A restart cannot tell a create in flight from one never sent: it
	// creates again with a new nonce, and the first ENI, once EC2 shows
	// it, is deleted as a duplicate. The check above holds one ENI per
	// node, none left behind.
	n, tokens := createdENIs(calls)
	t.Logf("NodeENI late with 6 kills during the lag: %d successful CreateNetworkInterface calls for %d ClientTokens (%d ENIs wanted, the rest deleted)",
		n, tokens, nodes)
}

// lateENIs returns the ENIs of NodeENI late by node, from EC2.
func (w *world) lateENIs() map[string][]string {
	out := map[string][]string{}
	for _, e := range w.eniState() {
		if e.Tags[eniplan.TagCluster] == cluster && e.Tags[eniplan.TagNodeENI] == "late" {
			status := "unattached"
			if e.Attachment != nil {
				status = e.Attachment.Status
			}
			out[e.Tags[eniplan.TagNode]] = append(out[e.Tags[eniplan.TagNode]], e.ID+"/"+status)
		}
	}
	return out
}

// deletePodsLagged deletes 50 pods and waits until EC2 describes their
// ENIs without the pods' tags.
func (w *world) deletePodsLagged() {
	for i := range 50 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%03d", i), Namespace: ns}}
		if err := w.k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
			w.t.Fatal(err)
		}
	}
	testenv.EventuallyEvery(w.t, "the deleted pods' tags removed", 2*time.Minute, 500*time.Millisecond, func() (bool, string) {
		all, left := w.eniState(), 0
		for i := range 50 {
			if _, ok := all[w.podENIs[i].ID].Tags["App"]; ok {
				left++
			}
		}
		return left == 0, fmt.Sprintf("%d deleted pods' tags left behind", left)
	})
	ok := tagWrites(w.ec2.Emulator.Calls(), "DeleteTags")
	var many []string
	for i := range 50 {
		if ok[w.podENIs[i].ID] > 1 {
			many = append(many, fmt.Sprintf("p-%03d: %d DeleteTags", i, ok[w.podENIs[i].ID]))
		}
	}
	slices.Sort(many)
	if len(many) > 0 {
		w.t.Errorf("tags of deleted pods removed more than once:\n%s", strings.Join(many, "\n"))
	}
}
