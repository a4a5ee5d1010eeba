package podcache

import (
	"maps"
	"slices"
	"strings"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// labelSet is a pod's labels as one comparable value (sorted keys and
// values joined by NUL, which neither may contain): the pods of one
// ReplicaSet carry the same labels, and unique.Make keeps one copy for
// all of them. Tag policies select pods by their labels.
type labelSet string

func newLabelSet(labels map[string]string) unique.Handle[labelSet] {
	if len(labels) == 0 {
		return unique.Handle[labelSet]{}
	}
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(labels)) {
		if i > 0 {
			b.WriteByte(0)
		}
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(labels[k])
	}
	return unique.Make(labelSet(b.String()))
}

// toMap returns the labels in a new map (nil when none).
func (s labelSet) toMap() map[string]string {
	if s == "" {
		return nil
	}
	parts := strings.Split(string(s), "\x00")
	m := make(map[string]string, len(parts)/2)
	for i := 0; i+1 < len(parts); i += 2 {
		m[parts[i]] = parts[i+1]
	}
	return m
}

// ownerRef is a pod's controller reference, comparable (no pointers), so
// the pods of one owner share it.
type ownerRef struct {
	APIVersion, Kind, Name string
	UID                    types.UID
}

// controllerRef returns the handle of the pod's controller reference; a
// zero handle when it has none.
func controllerRef(refs []metav1.OwnerReference) unique.Handle[ownerRef] {
	if ref := metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: refs}); ref != nil {
		return unique.Make(ownerRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID})
	}
	return unique.Handle[ownerRef]{}
}

// controllerRefOnly returns the controller's reference alone, nil when
// there is none.
func controllerRefOnly(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if h := controllerRef(refs); h != (unique.Handle[ownerRef]{}) {
		return h.Value().refs()
	}
	return nil
}

// refs returns the reference as a pod's owner references.
func (o ownerRef) refs() []metav1.OwnerReference {
	if o.Kind == "" {
		return nil
	}
	yes := true
	return []metav1.OwnerReference{{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: o.UID, Controller: &yes}}
}
