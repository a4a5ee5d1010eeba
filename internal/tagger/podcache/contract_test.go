package podcache_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/tagger"
	"github.com/eni-operator/eni-operator/internal/tagger/podcache"
)

// The pod cache's contract with controller-runtime, checked against the
// real cache and API server. The tagger relies on each of these; an
// upgrade that changes one fails here, not in a user's cluster:
//   - the transform gets every pod whole, before it is stored;
//   - event handlers get the stored object (CachedPod or stub) itself;
//   - Get copies a CachedPod through DeepCopyObject into a *corev1.Pod;
//   - Get of a stub fails with an error that is not NotFound, which the
//     read-through turns into an API server read;
//   - List fails on a stub (so shared-ENI mode keeps every pod whole).
//
// Every kind of pod a user creates is seen as itself.
func TestPodCacheContract(t *testing.T) {
	const key = "example.com/tags"
	k8s := testenv.Client(t, shared.Env(t).Config)
	ns := "podcache-contract"
	testenv.CreateNamespaces(t, k8s, ns)
	selected := func(p *corev1.Pod) bool { return p.Labels["cost"] == "tracked" || p.Name == "bare" }

	pods := map[string]*corev1.Pod{
		"bare":        {},
		"annotated":   {ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{key: "Team=a"}}},
		"policy-only": {ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"cost": "tracked"}}},
		"host":        {ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{key: "Team=a"}}, Spec: corev1.PodSpec{HostNetwork: true}},
		"terminating": {ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{key: "Team=a"}, Finalizers: []string{tagger.Finalizer}}},
		"unrelated":   {ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}},
	}
	for name, p := range pods {
		p.Name, p.Namespace = name, ns
		p.Spec.Containers = []corev1.Container{{Name: "c", Image: "i"}}
		if err := k8s.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, p := range pods {
			p.Finalizers = nil
			_ = k8s.Update(context.Background(), p)
			_ = k8s.Delete(context.Background(), p)
		}
	})
	if err := k8s.Delete(context.Background(), pods["terminating"]); err != nil {
		t.Fatal(err)
	}

	transformed := map[string]string{}
	var mu sync.Mutex
	stub := podcache.Stub(tagger.PodMarks(key), selected)
	transform := func(obj any) (any, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			mu.Lock()
			transformed[p.Name] = "whole"
			if len(p.Spec.Containers) == 0 {
				transformed[p.Name] = "trimmed before the transform"
			}
			mu.Unlock()
		}
		return stub(obj)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cfg := shared.Env(t).Config
	c, err := podcache.New(tagger.PodMarks(key))(cfg, cache.Options{Scheme: scheme, Mapper: k8s.RESTMapper(),
		DefaultNamespaces: map[string]cache.Config{ns: {}},
		ByObject:          map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: transform}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	handled := map[string]string{}
	handler, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		mu.Lock()
		defer mu.Unlock()
		o, _ := obj.(client.Object)
		if o == nil {
			handled[fmt.Sprintf("%T", obj)] = "not an object"
			return
		}
		switch obj.(type) {
		case *podcache.Pod:
			handled[o.GetName()] = "pod"
		case *metav1.PartialObjectMetadata:
			handled[o.GetName()] = "stub"
		default:
			handled[o.GetName()] = fmt.Sprintf("%T", obj)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !c.WaitForCacheSync(syncCtx) || !toolscache.WaitForCacheSync(syncCtx.Done(), handler.HasSynced) {
		t.Fatal("the cache did not sync")
	}

	mu.Lock()
	for name := range pods {
		if transformed[name] != "whole" {
			t.Errorf("pod %s reached the transform %q", name, transformed[name])
		}
	}
	wantHandled := map[string]string{"bare": "pod", "annotated": "pod", "policy-only": "pod", "host": "pod", "terminating": "pod", "unrelated": "stub"}
	for name, want := range wantHandled {
		if handled[name] != want {
			t.Errorf("event handler saw pod %s as %q, want %q", name, handled[name], want)
		}
	}
	if len(handled) != len(wantHandled) {
		t.Errorf("event handler saw %v, want only %v", handled, wantHandled)
	}
	mu.Unlock()

	// Each kind is read as itself through the cache.
	for name, want := range pods {
		var got corev1.Pod
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
			t.Errorf("Get %s: %v", name, err)
			continue
		}
		if got.UID != want.UID || got.Spec.HostNetwork != want.Spec.HostNetwork || len(got.Labels) != len(want.Labels) ||
			got.Annotations[key] != want.Annotations[key] || (name == "terminating") != (got.DeletionTimestamp != nil) {
			t.Errorf("Get %s read %+v", name, got.ObjectMeta)
		}
		if len(got.Spec.Containers) != 0 && name != "unrelated" {
			t.Errorf("Get %s: the cache kept the spec (%d containers)", name, len(got.Spec.Containers))
		}
	}

	// What the read-through relies on, on the cache beneath it.
	inner, err := cache.New(cfg, cache.Options{Scheme: scheme, Mapper: k8s.RESTMapper(),
		DefaultNamespaces: map[string]cache.Config{ns: {}},
		ByObject:          map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: stub}}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = inner.Start(ctx) }()
	if !inner.WaitForCacheSync(syncCtx) {
		t.Fatal("the inner cache did not sync")
	}
	var p corev1.Pod
	err = inner.Get(ctx, client.ObjectKey{Namespace: ns, Name: "unrelated"}, &p)
	if err == nil || apierrors.IsNotFound(err) {
		t.Errorf("Get of a stub: %v; the read-through needs an error that is not NotFound", err)
	}
	var list corev1.PodList
	if err := inner.List(ctx, &list); err == nil {
		t.Errorf("List with a stub in the cache succeeded (%d pods): shared-ENI mode's whole-pod cache is no longer needed, or stubs leak into lists", len(list.Items))
	}
}
