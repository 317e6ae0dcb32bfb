// What kube-scheduler v1.30's APIs (microshift release-4.17: k8s.io/kubernetes v1.30.1 replaced
// by openshift/kubernetes 4e295fa5, v1.30.14) make differ from v1.36; built beside ../harness.go.

package main

import (
	v1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// sourceTree names the tree the binary is built from; -ldflags -X overrides it.
var sourceTree = "openshift/microshift release-4.17 3a1aed37 (openshift/kubernetes 4e295fa5, v1.30.14)"

// Create and Update stamp the object first (client-go 1.30's tracker stores patches by Update).
func (t *rvTracker) Create(gvr schema.GroupVersionResource, obj k8sruntime.Object, ns string) error {
	t.stamp(obj)
	return t.ObjectTracker.Create(gvr, obj, ns)
}

func (t *rvTracker) Update(gvr schema.GroupVersionResource, obj k8sruntime.Object, ns string) error {
	t.stamp(obj)
	return t.ObjectTracker.Update(gvr, obj, ns)
}

// dropEvents: a recorder factory whose recorders drop every event.
func dropEvents() profile.RecorderFactory {
	return func(string) events.EventRecorder { return &events.FakeRecorder{} }
}

// tolerates: does the toleration tolerate the taint (the harness's own check of placements).
func tolerates(tol *v1.Toleration, taint *v1.Taint) bool {
	return tol.ToleratesTaint(taint)
}
