// What kube-scheduler v1.36's APIs (microshift release-4.23: k8s.io/kubernetes v1.36.3 replaced
// by the directory of openshift/kubernetes 7b29fb07) make differ from v1.30; built beside
// ../harness.go.

package main

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// sourceTree names the tree the binary is built from (the vendored k8s.io/kubernetes is replaced
// by a directory, so the build info carries no version of its own); -ldflags -X overrides it.
var sourceTree = "openshift/microshift release-4.23 ab25d114 (openshift/kubernetes 7b29fb07, KUBE_GIT_VERSION v1.36.3)"

func (t *rvTracker) Create(gvr schema.GroupVersionResource, obj k8sruntime.Object, ns string, opts ...metav1.CreateOptions) error {
	t.stamp(obj)
	return t.ObjectTracker.Create(gvr, obj, ns, opts...)
}

func (t *rvTracker) Update(gvr schema.GroupVersionResource, obj k8sruntime.Object, ns string, opts ...metav1.UpdateOptions) error {
	t.stamp(obj)
	return t.ObjectTracker.Update(gvr, obj, ns, opts...)
}

// Patch: since client-go 1.31 the fake client's patch reaction stores the patched object through
// Patch (1.30: Update); the scheduler's status patches must get a new resourceVersion too.
func (t *rvTracker) Patch(gvr schema.GroupVersionResource, obj k8sruntime.Object, ns string, opts ...metav1.PatchOptions) error {
	t.stamp(obj)
	return t.ObjectTracker.Patch(gvr, obj, ns, opts...)
}

// Apply is not used by the scheduler; the stored object is re-read and stamped by an Update.
func (t *rvTracker) Apply(gvr schema.GroupVersionResource, obj k8sruntime.Object, ns string, opts ...metav1.PatchOptions) error {
	if err := t.ObjectTracker.Apply(gvr, obj, ns, opts...); err != nil {
		return err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	stored, err := t.ObjectTracker.Get(gvr, ns, m.GetName())
	if err != nil {
		return err
	}
	return t.Update(gvr, stored, ns)
}

// IsWatchListSemanticsUnSupported: the wrapped tracker cannot serve WatchList (streaming lists).
func (t *rvTracker) IsWatchListSemanticsUnSupported() bool { return true }

// dropEvents: a recorder factory whose recorders drop every event.
func dropEvents() profile.RecorderFactory {
	return func(string) events.EventRecorderLogger { return &events.FakeRecorder{} }
}

// tolerates: does the toleration tolerate the taint (the harness's own check of placements),
// with 1.36's comparison operators as the binary's gate has them.
func tolerates(tol *v1.Toleration, taint *v1.Taint) bool {
	comparisonOperators := utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature("TaintTolerationComparisonOperators"))
	return tol.ToleratesTaint(klog.Background(), taint, comparisonOperators)
}
