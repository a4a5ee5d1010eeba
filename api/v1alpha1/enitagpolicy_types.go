package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Limits of an ENITagPolicy, shared by the CRD's markers and the code
// that compiles policies.
const (
	// MaxTagPolicyRules bounds each of defaults, enforced and
	// externallyManagedKeys: an ENI holds at most 50 tags in all.
	MaxTagPolicyRules = 50
	// MaxTagPolicyExpressionLength bounds an expression's text, so that
	// compiling one stays cheap and its message quotable.
	MaxTagPolicyExpressionLength = 1024
)

// Reasons of an ENITagPolicy's Ready condition (type ConditionReady).
const (
	// TagPolicyReasonValid: every rule compiled; the policy is applied.
	TagPolicyReasonValid = "Valid"
	// TagPolicyReasonInvalidExpression: an expression does not compile or
	// does not give a string; the message names the rule.
	TagPolicyReasonInvalidExpression = "InvalidExpression"
	// TagPolicyReasonReservedKey: a rule sets a reserved key; the message
	// names the rule.
	TagPolicyReasonReservedKey = "ReservedKey"
	// TagPolicyReasonInvalidTag: a key or fixed value breaks the character
	// rule; the message names the rule.
	TagPolicyReasonInvalidTag = "InvalidTag"
	// TagPolicyReasonConflictingRules: the policy sets one key twice, or
	// sets a key it also lists as externally managed.
	TagPolicyReasonConflictingRules = "ConflictingRules"
	// TagPolicyReasonInvalidSelector: a selector's expression is
	// malformed (an unknown operator, In without values, ...).
	TagPolicyReasonInvalidSelector = "InvalidSelector"
)

// ENITagPolicySpec says which pods' ENIs get which tags.
// +kubebuilder:validation:XValidation:rule="!has(self.nodeSelector) || (!has(self.namespaceSelector) && !has(self.podSelector))",message="a policy tags either pods (namespaceSelector, podSelector) or NodeENI interfaces (nodeSelector): set one kind of selector"
type ENITagPolicySpec struct {
	// Priority decides between policies that set the same key on one
	// pod's ENI: the higher priority wins; between equal priorities the
	// policy whose name sorts first wins, and the conflict is reported on
	// both policies.
	// +optional
	// +kubebuilder:default=0
	Priority int32 `json:"priority"`

	// NamespaceSelector selects, by the namespace's labels, the namespaces
	// whose pods the policy applies to. Unset, the policy applies in every
	// namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// PodSelector selects, by the pod's labels, the pods of those
	// namespaces the policy applies to. Unset, it applies to every pod.
	// +optional
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`

	// NodeSelector makes the policy one for NodeENI interfaces instead of
	// pods: it selects nodes by their labels, and the NodeENI interfaces
	// of those nodes get its tags at creation and keep them in sync. Its
	// defaults yield to the NodeENI's spec.tags, its enforced tags
	// override them. An empty selector selects every node.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`

	// Defaults are tags a matching pod's ENI gets unless the pod's
	// annotation (eni-tagger.io/tags) sets the same key.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MaxItems=50
	Defaults []TagRule `json:"defaults,omitempty"`

	// Enforced are tags a matching pod's ENI gets whatever the pod's
	// annotation says; a pod that asks for another value of the key gets
	// this one, and the conflict is reported on the pod and the policy.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MaxItems=50
	Enforced []TagRule `json:"enforced,omitempty"`

	// ExternallyManagedKeys are tag keys the operator never writes nor
	// removes on a matching pod's ENI, whoever asks for them (a policy or
	// the pod's annotation): another tool owns them.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=127
	ExternallyManagedKeys []string `json:"externallyManagedKeys,omitempty"`
}

// TagRule is one tag of a policy: its key, and either a fixed value or
// a CEL expression that computes the value for each pod.
//
// +kubebuilder:validation:XValidation:rule="has(self.value) != has(self.expression)",message="set exactly one of value and expression"
type TagRule struct {
	// Key is the tag's key: 1-127 characters, no control characters, no
	// white space at either end, and no reserved prefix (the operator's
	// own, AWS's, and those other AWS and Kubernetes components act on).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=127
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'\p{Cc}')`,message="tag keys may not hold control characters (U+0000-U+001F, U+007F-U+009F): remove them"
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'^\p{Z}|\p{Z}$')`,message="tag keys may not begin or end with white space: remove it"
	// +kubebuilder:validation:XValidation:rule="!['eni-operator.io/', 'eni-tagger.io/', 'aws:', 'kubernetes.io/', 'k8s.io/', 'node.k8s.amazonaws.com/', 'cluster.k8s.amazonaws.com/', 'cni.networking.k8s.aws/', 'vpcresources.k8s.aws/', 'eks:', 'eks-cluster-name', 'karpenter.sh/', 'karpenter.k8s.aws/', 'elbv2.k8s.aws/', 'service.k8s.aws/', 'ingress.k8s.aws/'].exists(p, self.lowerAscii().startsWith(p))",message="tag keys starting with a reserved prefix (eni-operator.io/, eni-tagger.io/, aws:, kubernetes.io/, k8s.io/, node.k8s.amazonaws.com/, cluster.k8s.amazonaws.com/, cni.networking.k8s.aws/, vpcresources.k8s.aws/, eks:, eks-cluster-name, karpenter.sh/, karpenter.k8s.aws/, elbv2.k8s.aws/, service.k8s.aws/, ingress.k8s.aws/) are not allowed: the operator or another AWS/Kubernetes component acts on them"
	Key string `json:"key"`

	// Value is the tag's value as written (an empty value is a tag
	// without a value).
	// +optional
	Value *TagValue `json:"value,omitempty"`

	// Expression is a CEL expression that gives the tag's value, a
	// string, from the variables pod (name, namespace, labels,
	// annotations, serviceAccountName, nodeName), namespaceObject (name,
	// labels), owner (kind and name of the pod's top-level owner: its
	// Deployment, StatefulSet, DaemonSet, Job or CronJob, or the pod
	// itself) and node (name, labels, zone, instanceType). Example:
	// namespaceObject.labels['cost-center']. A pod for which it fails
	// (e.g. a label it reads is missing) is refused, not tagged.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Expression string `json:"expression,omitempty"`
}

// ENITagPolicyStatus is what the operator observed of a policy.
type ENITagPolicyStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// MatchedPods counts the pods the policy's selectors match.
	// +optional
	// +kubebuilder:default=0
	MatchedPods int32 `json:"matchedPods"`
	// TaggedPods counts the matched pods whose ENIs carry the policy's
	// tags.
	// +optional
	// +kubebuilder:default=0
	TaggedPods int32 `json:"taggedPods"`
	// RefusedPods counts the matched pods the operator refused to tag
	// (an expression failed for them, too many tags, ...); each pod's
	// condition eni-tagger.io/tagged says why.
	// +optional
	// +kubebuilder:default=0
	RefusedPods int32 `json:"refusedPods"`
	// Conditions holds Ready: True when every rule compiled, False with
	// reason InvalidExpression, ReservedKey, InvalidTag, ConflictingRules
	// or InvalidSelector and a message naming the rule to fix (the policy
	// is then applied to no pod).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ENITagPolicy gives the ENIs of the pods it selects tags a platform team
// decides, without touching the pods: defaults a pod's annotation may
// override, enforced tags it may not, and keys the operator leaves to
// other tools. Cluster-scoped: pods' authors cannot weaken it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=etp
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`,description="Higher wins a key another policy sets too"
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.matchedPods`,description="Pods the selectors match"
// +kubebuilder:printcolumn:name="Tagged",type=integer,JSONPath=`.status.taggedPods`,description="Matched pods whose ENIs carry the policy's tags"
// +kubebuilder:printcolumn:name="Refused",type=integer,JSONPath=`.status.refusedPods`,description="Matched pods refused (see each pod's eni-tagger.io/tagged condition)"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ENITagPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ENITagPolicySpec   `json:"spec"`
	Status ENITagPolicyStatus `json:"status,omitempty"`
}

// ENITagPolicyList is a list of ENITagPolicies.
//
// +kubebuilder:object:root=true
type ENITagPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ENITagPolicy `json:"items"`
}
