// Command kschedbench runs the real kube-scheduler (k8s.io/kubernetes/pkg/scheduler, as vendored
// by an openshift/microshift branch: release-4.17 for v1.30, release-4.23 for v1.36) in-process
// over a fake clientset, on the objects of one of kubesched's bench workloads, and prints one
// JSON line of figures.
//
// This file is shared by both releases; what their APIs make differ (the object tracker's
// methods, the recorder factory's type, Toleration.ToleratesTaint, the source tree's name) is in
// v1.30/kube.go and v1.36/kube.go, one of which is built beside it. Feature gates stay at the
// binary's defaults; -feature-gates overrides them (e.g. SchedulerAsyncPreemption=false on 1.36
// for 1.30-style synchronous victim deletion).
//
// With 1.36's SchedulerAsyncPreemption a preemptor's victims are deleted by a goroutine started
// from PostFilter, off the scheduling loop: busy time then no longer includes the deletions
// (which run inside the loop in 1.30). The time spent in the victims' delete calls is reported
// beside (preemption_delete_seconds, from the fake client's delete reactor).
//
// The input (written by scripts/kube_scheduler_bench.py --dump) is a JSON document holding the
// workload's namespaces, nodes, running pods (spec.nodeName set), PodDisruptionBudgets,
// Services, ReplicaSets and priority classes, which are in the fake clientset before the
// scheduler starts, and the pending pods to measure, which are created through the fake client
// once the scheduler's informers have synced and its scheduling loop runs (as scheduler_perf
// creates its measured pods). The scheduler is built as cmd/kube-scheduler builds it: the
// defaulted v1 KubeSchedulerConfiguration (latest.Default()), scheduler.New with its shared
// informers (scheduler.NewInformerFactory) and its own scheduling queue, then sched.Run.
//
// The fake clientset is client-go's (k8s.io/client-go/kubernetes/fake) with two additions an
// API server would provide: every stored object gets a fresh resourceVersion (the scheduler
// ignores pod updates whose resourceVersion did not change), and a pods/binding reactor sets
// spec.nodeName (and the PodScheduled condition) on the stored pod, so that the informers see
// the pod bound. Preemption victims are deleted through the fake client by the scheduler itself.
// Events go to a recorder that drops them (kubesched's bench emits none either); -events sends
// them through an events/v1 broadcaster into the fake clientset instead.
//
// Figures: wall seconds from the first measured pod's creation to the moment the last measured
// pod was bound (or, for a pod expected to fit nowhere, got its first Unschedulable status).
// Busy seconds: the wall time of the scheduling loop minus its waits in the queue, i.e. the sum
// over ScheduleOne calls of the time from the queue handing out a pod to the loop asking for the
// next one (sched.NextPod is wrapped to time it); when the queue never waits, busy ~ wall.
// Attempt seconds: the sum of kube-scheduler's own scheduler_scheduling_attempt_duration_seconds
// over the run; a scheduled pod's attempt lasts until its asynchronous binding cycle ends, so
// these overlap the next attempts and their sum exceeds the wall time even when nothing waits
// (reported beside, not used for the figure).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/profile"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
)

// input is the dump of one kubesched bench workload.
type input struct {
	Workload        string                         `json:"workload"`
	Namespaces      []v1.Namespace                 `json:"namespaces"`
	Nodes           []v1.Node                      `json:"nodes"`
	Running         []v1.Pod                       `json:"running"`
	Pending         []v1.Pod                       `json:"pending"`
	Unschedulable   []string                       `json:"unschedulable"` // namespace/name of pending pods that fit nowhere
	PDBs            []policyv1.PodDisruptionBudget `json:"pdbs"`
	Services        []v1.Service                   `json:"services"`
	ReplicaSets     []appsv1.ReplicaSet            `json:"replicasets"`
	PriorityClasses []schedulingv1.PriorityClass   `json:"priorityClasses"`
	Expect          map[string]int                 `json:"expect"`
}

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// rvTracker stamps every object it stores with a new resourceVersion, as an API server does.
type rvTracker struct {
	clienttesting.ObjectTracker
	rv atomic.Int64
}

func (t *rvTracker) stamp(obj k8sruntime.Object) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatInt(t.rv.Add(1), 10))
	}
}

func (t *rvTracker) Add(obj k8sruntime.Object) error {
	t.stamp(obj)
	return t.ObjectTracker.Add(obj)
}

// progress records what happens to the measured pods.
type progress struct {
	mu            sync.Mutex
	want          map[string]bool // measured pod -> expected to bind (false: expected to fit nowhere)
	bound         map[string]string
	failed        map[string]string // first Unschedulable message per measured pod
	remaining     int
	last          time.Time
	done          chan struct{}
	victims       int
	protected     int           // victims labelled protected=true (preemption-pdb)
	deleteTime    time.Duration // time in the victims' delete calls (async preemption: off the loop)
	unexpected    []string
	nominations   int
	measuredStart atomic.Bool
}

func (p *progress) finish(key string) {
	p.remaining--
	p.last = time.Now()
	if p.remaining == 0 {
		close(p.done)
	}
}

func (p *progress) onBind(key, node string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	bind, measured := p.want[key]
	if !measured {
		return
	}
	if _, again := p.bound[key]; again {
		p.unexpected = append(p.unexpected, "bound twice: "+key)
		return
	}
	p.bound[key] = node
	if !bind {
		p.unexpected = append(p.unexpected, "bound although it fits nowhere: "+key)
		return
	}
	p.finish(key)
}

func (p *progress) onUnschedulable(key, message string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	bind, measured := p.want[key]
	if !measured {
		return
	}
	if _, seen := p.failed[key]; seen {
		return
	}
	p.failed[key] = message
	if !bind {
		p.finish(key)
	}
}

type result struct {
	Workload              string             `json:"workload"`
	Nodes                 int                `json:"nodes"`
	Running               int                `json:"running"`
	Pods                  int                `json:"pods"`
	Bound                 int                `json:"bound"`
	ExpectedBound         int                `json:"expected_bound"`
	Unschedulable         int                `json:"unschedulable_attempted"`
	ExpectedUnschedulable int                `json:"expected_unschedulable"`
	FailedOnce            int                `json:"measured_pods_failed_at_least_once"`
	Victims               int                `json:"victims_deleted"`
	ProtectedVictims      int                `json:"protected_victims_deleted"`
	Nominations           int                `json:"nominations"`
	PreemptionDeleteSecs  float64            `json:"preemption_delete_seconds"`
	WallSeconds           float64            `json:"wall_seconds"`
	CreateSeconds         float64            `json:"create_seconds"`
	BusySeconds           float64            `json:"busy_seconds"`
	AttemptSecondsSum     float64            `json:"attempt_seconds_sum"`
	Attempts              map[string]uint64  `json:"attempts"`
	AttemptSeconds        map[string]float64 `json:"attempt_seconds"`
	PodsPerSecond         float64            `json:"pods_per_second"`
	PodsPerBusySecond     float64            `json:"pods_per_busy_second"`
	PodsPerAttemptSecond  float64            `json:"pods_per_attempt_second"`
	TimedOut              bool               `json:"timed_out"`
	OverCapacityNodes     int                `json:"over_capacity_nodes"`
	RuleViolations        int                `json:"rule_violations"`
	Problems              []string           `json:"problems"`
	SampleFailure         string             `json:"sample_failure_message,omitempty"`
	Events                bool               `json:"events"`
	GoVersion             string             `json:"go_version"`
	GOMAXPROCS            int                `json:"gomaxprocs"`
	Kubernetes            string             `json:"kubernetes"`
	SourceTree            string             `json:"source_tree"`
	FeatureGates          map[string]bool    `json:"feature_gates"`
	Placements            map[string]string  `json:"-"`
}

func main() {
	klog.InitFlags(nil)
	inPath := flag.String("input", "", "the workload's JSON (scripts/kube_scheduler_bench.py --dump)")
	timeout := flag.Duration("timeout", 15*time.Minute, "give up waiting for the measured pods after this long")
	sendEvents := flag.Bool("events", false, "send the scheduler's events through an events/v1 broadcaster into the fake clientset (default: drop them)")
	placementsPath := flag.String("placements", "", "also write measured pod -> node as JSON to this file")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the measured window to this file")
	gates := flag.String("feature-gates", "", "override feature gates, e.g. SchedulerAsyncPreemption=false (default: the 1.36 defaults)")
	flag.Parse()
	if *gates != "" {
		if err := utilfeature.DefaultMutableFeatureGate.Set(*gates); err != nil {
			fmt.Fprintln(os.Stderr, "kschedbench: -feature-gates:", err)
			os.Exit(2)
		}
	}
	if *inPath == "" {
		fmt.Fprintln(os.Stderr, "usage: kschedbench -input workload.json [-timeout 15m] [-events] [-placements out.json] [-cpuprofile cpu.out] [-feature-gates A=false,...]")
		os.Exit(2)
	}
	res, err := run(*inPath, *timeout, *sendEvents, *cpuProfile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kschedbench:", err)
		os.Exit(1)
	}
	if *placementsPath != "" {
		data, _ := json.Marshal(res.Placements)
		if err := os.WriteFile(*placementsPath, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "kschedbench:", err)
			os.Exit(1)
		}
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	// Exit without tearing the scheduler down (its goroutines would only add noise).
	os.Exit(0)
}

func run(path string, timeout time.Duration, sendEvents bool, cpuProfile string) (*result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var in input
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	// The fake watchers panic when their buffer (watch.DefaultChanSize, 100) is full; creating
	// thousands of pods in a row fills it before the informers drain it.
	watch.DefaultChanSize = 1 << 16

	tracker := &rvTracker{ObjectTracker: clienttesting.NewObjectTracker(scheme.Scheme, scheme.Codecs.UniversalDecoder())}
	var objects []k8sruntime.Object
	objects = append(objects, objectsOf(in.Namespaces)...)
	objects = append(objects, objectsOf(in.PriorityClasses)...)
	objects = append(objects, objectsOf(in.Nodes)...)
	objects = append(objects, objectsOf(in.Running)...)
	objects = append(objects, objectsOf(in.PDBs)...)
	objects = append(objects, objectsOf(in.Services)...)
	objects = append(objects, objectsOf(in.ReplicaSets)...)
	for _, obj := range objects {
		if err := tracker.Add(obj); err != nil {
			return nil, err
		}
	}

	prog := &progress{want: map[string]bool{}, bound: map[string]string{}, failed: map[string]string{},
		done: make(chan struct{})}
	unschedulable := map[string]bool{}
	for _, k := range in.Unschedulable {
		unschedulable[k] = true
	}
	for i := range in.Pending {
		p := &in.Pending[i]
		prog.want[p.Namespace+"/"+p.Name] = !unschedulable[p.Namespace+"/"+p.Name]
	}
	prog.remaining = len(prog.want)
	if prog.remaining == 0 {
		return nil, fmt.Errorf("no pending pods in %s", path)
	}

	client := fake.NewSimpleClientset()
	// Replace the clientset's own tracker by the resourceVersion-stamping one.
	client.ReactionChain = nil
	client.WatchReactionChain = nil
	client.AddReactor("*", "*", clienttesting.ObjectReaction(tracker))
	podsWatched := make(chan struct{})
	var podsWatchedOnce sync.Once
	client.AddWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := tracker.Watch(action.GetResource(), action.GetNamespace())
		if err != nil {
			return false, nil, err
		}
		if action.GetResource().Resource == "pods" {
			podsWatchedOnce.Do(func() { close(podsWatched) })
		}
		return true, w, nil
	})
	// pods/binding: what the API server's binding storage does (assignPod).
	client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
		create := action.(clienttesting.CreateAction)
		if create.GetSubresource() != "binding" {
			return false, nil, nil
		}
		binding := create.GetObject().(*v1.Binding)
		ns := action.GetNamespace()
		obj, err := tracker.Get(podsGVR, ns, binding.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*v1.Pod)
		if pod.Spec.NodeName != "" {
			return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), binding.Name,
				fmt.Errorf("pod %s is already assigned to node %q", binding.Name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = binding.Target.Name
		setScheduledCondition(pod)
		if err := tracker.Update(podsGVR, pod, ns); err != nil {
			return true, nil, err
		}
		prog.onBind(ns+"/"+binding.Name, binding.Target.Name)
		return true, binding, nil
	})
	// Observe victims' deletions and delete them here (what the default reactor would do), timing
	// the call.
	client.PrependReactor("delete", "pods", func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
		t0 := time.Now()
		name := action.(clienttesting.DeleteAction).GetName()
		obj, err := tracker.Get(podsGVR, action.GetNamespace(), name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*v1.Pod)
		err = tracker.Delete(podsGVR, action.GetNamespace(), name)
		d := time.Since(t0)
		prog.mu.Lock()
		if err == nil {
			prog.victims++
			if pod.Labels["protected"] == "true" {
				prog.protected++
			}
		}
		prog.deleteTime += d
		prog.mu.Unlock()
		return true, nil, err
	})
	// Observe the scheduler's status patches: PodScheduled=False (Unschedulable) after a failed
	// attempt, status.nominatedNodeName after a preemption.
	client.PrependReactor("patch", "pods", func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
		patch := action.(clienttesting.PatchAction)
		if patch.GetSubresource() != "status" {
			return false, nil, nil
		}
		var body struct {
			Status struct {
				NominatedNodeName string `json:"nominatedNodeName"`
				Conditions        []struct {
					Type    string `json:"type"`
					Reason  string `json:"reason"`
					Message string `json:"message"`
				} `json:"conditions"`
			} `json:"status"`
		}
		if err := json.Unmarshal(patch.GetPatch(), &body); err != nil {
			return false, nil, nil
		}
		key := action.GetNamespace() + "/" + patch.GetName()
		if body.Status.NominatedNodeName != "" {
			prog.mu.Lock()
			prog.nominations++
			prog.mu.Unlock()
		}
		for _, c := range body.Status.Conditions {
			if c.Type == string(v1.PodScheduled) && c.Reason == v1.PodReasonUnschedulable {
				prog.onUnschedulable(key, c.Message)
			}
		}
		return false, nil, nil
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	cfg, err := latest.Default()
	if err != nil {
		return nil, err
	}
	var recorderFactory profile.RecorderFactory
	if sendEvents {
		broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
		broadcaster.StartRecordingToSink(ctx.Done())
		recorderFactory = profile.NewRecorderFactory(broadcaster)
	} else {
		recorderFactory = dropEvents()
	}
	informerFactory := scheduler.NewInformerFactory(client, 0)
	sched, err := scheduler.New(ctx, client, informerFactory, nil, recorderFactory,
		scheduler.WithComponentConfigVersion(cfg.TypeMeta.APIVersion),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithExtenders(cfg.Extenders...),
		scheduler.WithParallelism(cfg.Parallelism),
	)
	if err != nil {
		return nil, err
	}

	// Loop busy time: from a pod popped to the next call for one.
	var loopBusy time.Duration
	var popped time.Time
	var loopMu sync.Mutex
	nextPod := sched.NextPod
	sched.NextPod = func(logger klog.Logger) (*framework.QueuedPodInfo, error) {
		now := time.Now()
		loopMu.Lock()
		if !popped.IsZero() && prog.measuredStart.Load() {
			loopBusy += now.Sub(popped)
		}
		popped = time.Time{}
		loopMu.Unlock()
		pi, err := nextPod(logger)
		loopMu.Lock()
		popped = time.Now()
		loopMu.Unlock()
		return pi, err
	}

	informerFactory.Start(ctx.Done())
	for typ, ok := range informerFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		return nil, fmt.Errorf("waiting for the scheduler's event handlers: %w", err)
	}
	select {
	case <-podsWatched:
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("the pod informer never watched")
	}
	go sched.Run(ctx)

	sumBefore, countBefore, err := attemptHistogram()
	if err != nil {
		return nil, err
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
	}
	prog.measuredStart.Store(true)
	start := time.Now()
	for i := range in.Pending {
		p := &in.Pending[i]
		if _, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	created := time.Since(start)

	timedOut := false
	select {
	case <-prog.done:
	case <-time.After(timeout):
		timedOut = true
	}
	stop := time.Now()
	prog.measuredStart.Store(false)
	if cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	// Let the last binding cycle record its attempt (it observes the histogram after Bind returns).
	time.Sleep(200 * time.Millisecond)
	sumAfter, countAfter, err := attemptHistogram()
	if err != nil {
		return nil, err
	}
	loopMu.Lock()
	busyLoop := loopBusy
	loopMu.Unlock()

	prog.mu.Lock()
	defer prog.mu.Unlock()
	end := prog.last
	if timedOut || end.IsZero() {
		end = stop
	}
	res := &result{
		Workload: in.Workload, Nodes: len(in.Nodes), Running: len(in.Running), Pods: len(in.Pending),
		ExpectedBound: len(in.Pending) - len(unschedulable), ExpectedUnschedulable: len(unschedulable),
		Victims: prog.victims, ProtectedVictims: prog.protected, Nominations: prog.nominations,
		PreemptionDeleteSecs: prog.deleteTime.Seconds(), SourceTree: sourceTree,
		WallSeconds: end.Sub(start).Seconds(), CreateSeconds: created.Seconds(),
		BusySeconds: busyLoop.Seconds(), TimedOut: timedOut, Events: sendEvents,
		Attempts: map[string]uint64{}, AttemptSeconds: map[string]float64{},
		GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0), Kubernetes: kubernetesVersion(),
		FeatureGates: featureGates(), Placements: map[string]string{}, Problems: []string{},
	}
	for result, s := range sumAfter {
		res.AttemptSeconds[result] = s - sumBefore[result]
		res.Attempts[result] = countAfter[result] - countBefore[result]
		res.AttemptSecondsSum += s - sumBefore[result]
	}
	for key, node := range prog.bound {
		res.Placements[key] = node
		if prog.want[key] {
			res.Bound++
		}
	}
	for key, msg := range prog.failed {
		if !prog.want[key] {
			res.Unschedulable++
			if res.SampleFailure == "" {
				res.SampleFailure = msg
			}
		}
	}
	res.FailedOnce = len(prog.failed)
	res.Problems = append(res.Problems, prog.unexpected...)
	if res.Bound != res.ExpectedBound {
		res.Problems = append(res.Problems, fmt.Sprintf("%d of %d pods bound", res.Bound, res.ExpectedBound))
	}
	if res.Unschedulable != res.ExpectedUnschedulable {
		res.Problems = append(res.Problems, fmt.Sprintf("%d of %d pods that fit nowhere were attempted",
			res.Unschedulable, res.ExpectedUnschedulable))
	}
	for name, want := range in.Expect {
		got := map[string]int{"victims": res.Victims, "protected_victims": res.ProtectedVictims}[name]
		if got != want {
			res.Problems = append(res.Problems, fmt.Sprintf("%s: %d, want %d", name, got, want))
		}
	}
	res.OverCapacityNodes, res.RuleViolations = checkCluster(tracker, in, prog.bound)
	if res.OverCapacityNodes > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%d nodes over capacity", res.OverCapacityNodes))
	}
	if res.RuleViolations > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%d pods on a node their nodeSelector or tolerations forbid", res.RuleViolations))
	}
	if res.WallSeconds > 0 {
		res.PodsPerSecond = float64(res.Pods) / res.WallSeconds
	}
	if res.BusySeconds > 0 {
		res.PodsPerBusySecond = float64(res.Pods) / res.BusySeconds
	}
	if res.AttemptSecondsSum > 0 {
		res.PodsPerAttemptSecond = float64(res.Pods) / res.AttemptSecondsSum
	}
	return res, nil
}

func setScheduledCondition(pod *v1.Pod) {
	cond := v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()}
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1.PodScheduled {
			pod.Status.Conditions[i] = cond
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, cond)
}

// attemptHistogram reads scheduler_scheduling_attempt_duration_seconds: sum and count per result.
func attemptHistogram() (map[string]float64, map[string]uint64, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil, nil, err
	}
	sums, counts := map[string]float64{}, map[string]uint64{}
	for _, mf := range families {
		if mf.GetName() != "scheduler_scheduling_attempt_duration_seconds" || mf.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range mf.GetMetric() {
			result := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					result = l.GetValue()
				}
			}
			sums[result] += m.GetHistogram().GetSampleSum()
			counts[result] += m.GetHistogram().GetSampleCount()
		}
	}
	return sums, counts, nil
}

// checkCluster counts the nodes whose pods request more cpu, memory or pods than the node
// allows, and the measured pods bound to a node their nodeSelector or tolerations forbid.
func checkCluster(tracker clienttesting.ObjectTracker, in input, bound map[string]string) (int, int) {
	obj, err := tracker.List(podsGVR, v1.SchemeGroupVersion.WithKind("Pod"), "")
	if err != nil {
		return -1, -1
	}
	type usage struct{ cpu, mem, pods int64 }
	used := map[string]*usage{}
	for i := range obj.(*v1.PodList).Items {
		p := &obj.(*v1.PodList).Items[i]
		if p.Spec.NodeName == "" {
			continue
		}
		u := used[p.Spec.NodeName]
		if u == nil {
			u = &usage{}
			used[p.Spec.NodeName] = u
		}
		u.pods++
		for _, c := range p.Spec.Containers {
			u.cpu += c.Resources.Requests.Cpu().MilliValue()
			u.mem += c.Resources.Requests.Memory().Value()
		}
	}
	nodes := map[string]*v1.Node{}
	over := 0
	for i := range in.Nodes {
		n := &in.Nodes[i]
		nodes[n.Name] = n
		u := used[n.Name]
		if u == nil {
			continue
		}
		a := n.Status.Allocatable
		if u.cpu > a.Cpu().MilliValue() || u.mem > a.Memory().Value() || u.pods > a.Pods().Value() {
			over++
		}
	}
	violations := 0
	for i := range in.Pending {
		p := &in.Pending[i]
		n := nodes[bound[p.Namespace+"/"+p.Name]]
		if n == nil {
			continue
		}
		for k, v := range p.Spec.NodeSelector {
			if n.Labels[k] != v {
				violations++
			}
		}
		for _, t := range n.Spec.Taints {
			if t.Effect == v1.TaintEffectPreferNoSchedule {
				continue
			}
			tolerated := false
			for j := range p.Spec.Tolerations {
				if tolerates(&p.Spec.Tolerations[j], &t) {
					tolerated = true
				}
			}
			if !tolerated {
				violations++
			}
		}
	}
	return over, violations
}

func kubernetesVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range info.Deps {
		if d.Path == "k8s.io/kubernetes" {
			if d.Replace != nil {
				return strings.TrimSpace(d.Version + " => " + d.Replace.Path + " " + d.Replace.Version)
			}
			return d.Version
		}
	}
	return ""
}

// featureGates: the gates the default profile's plugins and queue look at, as this binary has them.
func featureGates() map[string]bool {
	out := map[string]bool{}
	for name := range utilfeature.DefaultMutableFeatureGate.GetAll() {
		n := string(name)
		if strings.HasPrefix(n, "Scheduler") || strings.Contains(n, "Preemption") || strings.Contains(n, "PodTopologySpread") ||
			strings.Contains(n, "PodAffinity") || n == "PodDisruptionConditions" || n == "DynamicResourceAllocation" ||
			n == "VolumeCapacityPriority" || n == "PodSchedulingReadiness" || n == "NominatedNodeNameForExpectation" ||
			n == "GenericWorkload" || n == "OpportunisticBatching" || n == "DRADeviceTaintRules" {
			out[n] = utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(n))
		}
	}
	return out
}

// objectsOf takes the address of every element of a slice of API objects (the tracker wants
// runtime.Objects, which only their pointers are).
func objectsOf[T any, P interface {
	*T
	k8sruntime.Object
}](items []T) []k8sruntime.Object {
	out := make([]k8sruntime.Object, 0, len(items))
	for i := range items {
		out = append(out, P(&items[i]))
	}
	return out
}
