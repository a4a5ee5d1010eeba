package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// Figures 3 and 4: 10,000 pods in sync, then a restart; memory with
// 10,000 annotated pods and their ENIs, then with 10,000 unannotated pods
// more (their marginal cost per pod).
func TestFigureRestartAndMemory(t *testing.T) {
	const n, sets = 10000, 20
	b := newBed(t, branchENIs(n))
	pprofAddr := b.startProfiledOperator()
	// What the operator holds before any pod: the binary, the runtime,
	// the client libraries' registries and the 10,000 ENIs' inventory.
	b.waitFor("the ENI inventory's pages (1,000 ENIs each)", 2*time.Minute, func() bool {
		calls, _ := b.calls()
		return calls["DescribeNetworkInterfaces"] >= n/1000
	})
	noPods := b.memory(pprofAddr, "no-pods")
	// firstSync counts from the last pod's creation, fromFirstPod from
	// the first's: an operator that keeps up while the pods are created
	// shows in the second.
	created := time.Now()
	b.createPods("sync", n, func(i int) map[string]string { return tagSet(i, sets) },
		func(i int) string { return b.loaded.NetworkInterfaces[i].PrivateIP })
	creating := time.Since(created)
	firstSync := b.waitFor("10,000 pods Synced", 15*time.Minute, func() bool { return b.synced("sync") == n })
	fromFirstPod := time.Since(created)
	annotated := b.memory(pprofAddr, "annotated")
	b.createPods("plain", n, func(int) map[string]string { return nil }, func(i int) string { return fmt.Sprintf("100.64.%d.%d", i/250, i%250+1) })
	both := b.memory(pprofAddr, "all")

	b.op.Stop()
	b.emu.ResetCounts()
	start := time.Now()
	pprofAddr = b.startProfiledOperator()
	b.waitFor("every pod reconciled after the restart", 10*time.Minute, func() bool {
		m, err := b.scrape()
		return err == nil && sum(m, "eni_operator_tagger_reconciles_total") >= n
	})
	took := time.Since(start)
	calls, total := b.calls()
	// In sync and restarted: no events of a tagging burst in the event
	// broadcaster's cache (kept 6-12 minutes), no ENIs written since the
	// last refresh.
	restarted := b.memory(pprofAddr, "restarted")
	writes := calls["CreateTags"] + calls["DeleteTags"]
	b.write(Figure{Name: "3-restart",
		Parameters: map[string]any{"podsInSync": n, "unannotatedPods": n},
		Results: map[string]any{"secondsUntilEveryPodConfirmed": took.Seconds(),
			"ec2CallsTotal": total, "tagWrites": writes, "firstSyncSeconds": firstSync.Seconds(),
			"firstSyncSecondsFromFirstPod": fromFirstPod.Seconds(), "secondsCreatingPods": creating.Seconds()},
		EC2Calls: calls, Notes: []string{"the DescribeNetworkInterfaces are the inventory's pages (1,000 ENIs each) and the startup DryRun permission checks"}})
	perPod := (both.heapInuse - annotated.heapInuse) / n
	perAnnotated := (annotated.heapInuse - noPods.heapInuse) / n
	b.write(Figure{Name: "4-memory",
		Parameters: map[string]any{"annotatedPods": n, "enis": n, "unannotatedPods": n},
		Results: map[string]any{"rssMiB": annotated.rss / (1 << 20), "goHeapInuseMiB": annotated.heapInuse / (1 << 20),
			"rssMiBWithUnannotated": both.rss / (1 << 20), "goHeapInuseMiBWithUnannotated": both.heapInuse / (1 << 20),
			"heapBytesPerUnannotatedPod": perPod, "breakdownMiB": annotated.breakdown(),
			"rssMiBNoPods": noPods.rss / (1 << 20), "breakdownMiBNoPods": noPods.breakdown(), "heapBytesPerAnnotatedPod": perAnnotated,
			"rssMiBRestartedInSync": restarted.rss / (1 << 20), "goHeapInuseMiBRestartedInSync": restarted.heapInuse / (1 << 20),
			"breakdownMiBRestartedInSync": restarted.breakdown()},
		Notes: slices.Concat(noPods.notes("no pods yet, 10,000 ENIs in the inventory"), annotated.notes("10,000 annotated pods just synced"), both.notes("10,000 unannotated pods more"),
			restarted.notes("all 20,000 pods, after a restart"))})
}

// startProfiledOperator starts the operator with its pprof endpoints on,
// and returns their address.
func (b *bed) startProfiledOperator(extra ...string) string {
	addr := testenv.FreeAddr(b.t)
	b.startOperator(append([]string{"--pprof-bind-address=" + addr}, extra...)...)
	return addr
}

// memorySample is the operator's memory at one moment: RSS and Go heap in
// use from /metrics, after a forced GC, and the heap profile's top
// allocation sites.
type memorySample struct {
	rss, heapInuse, heapFree, other float64
	// rssAnon and rssFile split RSS (/proc/<pid>/status, bytes): memory
	// the process owns, and the binary's pages it has touched (clean,
	// shared with the page cache, reclaimable under pressure).
	rssAnon, rssFile float64
	top              []string
}

func (m memorySample) notes(when string) []string {
	out := []string{fmt.Sprintf("heap profile with %s, top by inuse_space (flat):", when)}
	for _, l := range m.top {
		out = append(out, "  "+l)
	}
	return out
}

// memory waits for the informers and the ledger to settle, forces a GC
// (the profile endpoint's gc=1), and reads RSS, heap in use and the
// profile. The raw profile goes next to the figures as heap-<name>.pb.gz.
func (b *bed) memory(pprofAddr, name string) memorySample {
	b.t.Helper()
	// Let the ledger flush, the informers settle and the operator's
	// memory releaser take its next look (every 10 s): the figure is the
	// memory held in sync, not a burst's garbage on its way back to the OS.
	time.Sleep(25 * time.Second)
	raw := fetchHeapProfile(b.t, pprofAddr)
	if dir := resultsDir(); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("heap-%s-%s.pb.gz", strings.ToLower(strings.TrimPrefix(b.t.Name(), "TestFigure")), name)), raw, 0o644)
	}
	p, err := profile.ParseData(raw)
	if err != nil {
		b.t.Fatal(err)
	}
	m, err := b.scrape()
	if err != nil {
		b.t.Fatal(err)
	}
	return memorySample{rss: m["process_resident_memory_bytes"], heapInuse: m["go_memstats_heap_inuse_bytes"], top: topInuse(p, 12),
		rssAnon: procStatusBytes(b.operatorPID(), "RssAnon"), rssFile: procStatusBytes(b.operatorPID(), "RssFile"),
		heapFree: m["go_memstats_heap_idle_bytes"] - m["go_memstats_heap_released_bytes"],
		other:    m["go_memstats_sys_bytes"] - m["go_memstats_heap_sys_bytes"]}
}

// breakdown is where the RSS goes, in MiB: live heap (in use after the
// GC), heap the runtime keeps free but has not returned to the OS, and
// the runtime's other memory (stacks, GC metadata, buffers); the rest of
// RSS is the binary's pages.
func (m memorySample) breakdown() map[string]any {
	return map[string]any{"heapInuse": m.heapInuse / (1 << 20), "heapFreeNotReturned": m.heapFree / (1 << 20),
		"runtimeOther": m.other / (1 << 20), "rss": m.rss / (1 << 20),
		"rssAnon": m.rssAnon / (1 << 20), "rssFileBinaryPages": m.rssFile / (1 << 20)}
}

// procStatusBytes reads one kB field of /proc/<pid>/status, in bytes; 0
// when it cannot.
func procStatusBytes(pid int, field string) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb * 1024
		}
	}
	return 0
}

func fetchHeapProfile(t *testing.T, addr string) []byte {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("heap profile: %v (status %s)", err, resp.Status)
	}
	return raw
}

// resultsDir is where the figures go (BENCH_OUT, or bench/results).
func resultsDir() string {
	if dir := os.Getenv("BENCH_OUT"); dir != "" {
		return dir
	}
	root, _ := testenv.RepoRoot()
	return filepath.Join(root, "bench", "results")
}

// topInuse is `pprof -top -sample_index=inuse_space` in short: the
// functions holding the most live bytes, flat.
func topInuse(p *profile.Profile, n int) []string {
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "inuse_space" {
			idx = i
		}
	}
	if idx < 0 {
		return nil
	}
	byFunc := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		v := s.Value[idx]
		total += v
		name := "?"
		if len(s.Location) > 0 && len(s.Location[0].Line) > 0 {
			name = s.Location[0].Line[0].Function.Name
		}
		byFunc[name] += v
	}
	names := make([]string, 0, len(byFunc))
	for k := range byFunc {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int { return int(byFunc[b] - byFunc[a]) })
	out := []string{fmt.Sprintf("total %.1f MiB", float64(total)/(1<<20))}
	for _, k := range names[:min(n, len(names))] {
		out = append(out, fmt.Sprintf("%7.2f MiB %5.1f%% %s", float64(byFunc[k])/(1<<20), 100*float64(byFunc[k])/float64(max(total, 1)), k))
	}
	return out
}

// The 100,000-pod figure: 100,000 annotated pods on 100,000 branch ENIs
// (the VPC's pod subnets in two secondary /16 blocks, as a cluster this
// large has). Opt-in (`make bench-100k`, ENI_BENCH_100K=1): it takes
// longer than the rest of `make bench` together.
func TestFigureMemory100k(t *testing.T) {
	if os.Getenv("ENI_BENCH_100K") == "" {
		t.Skip("the 100,000-pod figure runs with `make bench-100k` (ENI_BENCH_100K=1)")
	}
	const n, sets = 100000, 20
	b := newBed(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		{Subnet: "pods-b", InterfaceType: "branch", Count: n / 2}, {Subnet: "pods-c", InterfaceType: "branch", Count: n / 2}}},
		func(w *emulator.World) {
			w.VPCs[0].SecondaryCIDRs = []string{"100.64.0.0/16", "100.65.0.0/16"}
			for i, c := range w.VPCs[0].SecondaryCIDRs {
				w.Subnets = append(w.Subnets, emulator.SubnetSpec{Name: "pods-" + string(rune('b'+i)), VPC: "main", CIDR: c, AvailabilityZone: "us-east-1a"})
			}
		})
	// The ledger holds ~3,000 pods per shard; 64 shards hold 100,000.
	// The first sync writes 2 Kubernetes requests per pod: at the default
	// --kube-api-qps it alone would take 17 minutes, and it is not what
	// this figure measures.
	shards := "--cache-shards=64"
	// The pods are created before the operator starts: creating them is
	// bound by the API server and etcd on this machine's two cores, and
	// an operator tagging them meanwhile made it twice as slow (18
	// minutes). The operator then starts as after an upgrade with
	// 100,000 annotated pods: one LIST of them all, then the first sync.
	start := time.Now()
	testenv.InParallel(n, 64, func(i int) {
		b.createPod(fmt.Sprintf("big-%06d", i), tagSet(i, sets), b.loaded.NetworkInterfaces[i].PrivateIP)
	})
	created := time.Since(start)
	pprofAddr := b.startProfiledOperator(shards, "--kube-api-qps=2000", "--kube-api-burst=4000")
	firstSync := testenv.EventuallyEvery(t, "100,000 pods Synced", 60*time.Minute, 15*time.Second, func() (bool, string) {
		k := b.syncedPaged()
		return k == n, fmt.Sprint(k, " Synced")
	})
	mem := b.memory(pprofAddr, "synced")

	b.op.Stop()
	b.emu.ResetCounts()
	start = time.Now()
	pprofAddr = b.startProfiledOperator(shards)
	b.waitFor("every pod reconciled after the restart", 30*time.Minute, func() bool {
		m, err := b.scrape()
		return err == nil && sum(m, "eni_operator_tagger_reconciles_total") >= n
	})
	took := time.Since(start)
	calls, total := b.calls()
	restarted := b.memory(pprofAddr, "restarted")
	b.write(Figure{Name: "6-memory-100k",
		Parameters: map[string]any{"annotatedPods": n, "enis": n, "operatorFlags": shards + " (first sync also --kube-api-qps=2000 --kube-api-burst=4000)"},
		Results: map[string]any{"rssMiB": mem.rss / (1 << 20), "goHeapInuseMiB": mem.heapInuse / (1 << 20),
			"secondsUntilEveryPodConfirmed": took.Seconds(), "ec2CallsTotal": total, "tagWrites": calls["CreateTags"] + calls["DeleteTags"],
			"secondsToCreatePods": created.Seconds(), "firstSyncSeconds": firstSync.Seconds(), "breakdownMiB": mem.breakdown(),
			"rssMiBRestartedInSync": restarted.rss / (1 << 20), "breakdownMiBRestartedInSync": restarted.breakdown()},
		EC2Calls: calls, Notes: slices.Concat(mem.notes("100,000 annotated pods just synced (operator started after the pods were created)"),
			restarted.notes("100,000 annotated pods, after a restart in sync"))})
}

// syncedPaged counts the figure's pods whose tagged condition is True,
// listing in pages: one list of 100,000 pods would hold them all at once.
func (b *bed) syncedPaged() int {
	n, cont := 0, ""
	for {
		var list corev1.PodList
		if err := b.k8s.List(context.Background(), &list, client.InNamespace(b.ns), client.Limit(5000), client.Continue(cont)); err != nil {
			b.t.Log(err)
			return n
		}
		for _, p := range list.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == "eni-tagger.io/tagged" && c.Status == corev1.ConditionTrue {
					n++
				}
			}
		}
		if cont = list.Continue; cont == "" {
			return n
		}
	}
}
