package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// reconcileLags is what the trivial reconcile records: for each object, the
// burst's stamp it last reconciled, and the time from each write to the
// first reconcile that read the state it wrote. The burst writes each object
// at most once (the script keeps --burst at most the objects), so the run is
// over when `want` objects have been reconciled in a state the burst wrote.
type reconcileLags struct {
	burstID    string
	want       int
	reconciles atomic.Int64
	mu         sync.Mutex
	stamps     map[string]int64
	lags       []float64
	firstStamp int64
	last       int64
	done       chan struct{}
}

func newReconcileLags(burstID string, want int) *reconcileLags {
	return &reconcileLags{
		burstID: burstID, want: want, stamps: make(map[string]int64, want),
		lags: make([]float64, 0, want), done: make(chan struct{}),
	}
}

// observe records a reconcile of `key` that read `obj` from the cache.
func (r *reconcileLags) observe(key string, obj interface{}) {
	r.reconciles.Add(1)
	if r.burstID == "" || obj == nil {
		return
	}
	stamp, ok := stampOf(obj, r.burstID)
	if !ok {
		return
	}
	now := time.Now().UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stamps[key] == stamp {
		return // this state was reconciled already
	}
	r.stamps[key] = stamp
	r.lags = append(r.lags, float64(now-stamp)/1e6)
	if r.firstStamp == 0 || stamp < r.firstStamp {
		r.firstStamp = stamp
	}
	r.last = max(r.last, now)
	if len(r.stamps) == r.want {
		close(r.done)
	}
}

// reconciledObjects is how many objects were reconciled in a state the burst wrote.
func (r *reconcileLags) reconciledObjects() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.stamps)
}

// waitInitial waits until the initial list's `objects` keys have been
// reconciled and nothing waits in the queue.
func (r *reconcileLags) waitInitial(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string], objects int) error {
	for r.reconciles.Load() < int64(objects) || queue.Len() > 0 {
		if ctx.Err() != nil {
			return fmt.Errorf("initial reconciles: %d of %d done before the deadline", r.reconciles.Load(), objects)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// waitBurst waits until the burst is over and gives its figures, with the
// reconciles done since `before` reconciles and the CPU since `cpuBefore`.
func (r *reconcileLags) waitBurst(ctx context.Context, before int64, cpuBefore float64) (map[string]interface{}, error) {
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("burst: %d of %d written objects reconciled before the deadline", r.reconciledObjects(), r.want)
	}
	cpu := cpuSeconds() - cpuBefore
	reconciles := r.reconciles.Load() - before
	m := r.result()
	m["reconciles"] = reconciles
	m["cpu_burst_s"] = round(cpu, 3)
	m["cpu_per_reconcile_us"] = round(cpu*1e6/float64(max(reconciles, 1)), 1)
	m["rss_peak_mb"] = round(procStatusMB("VmHWM"), 1)
	return m, nil
}

// result gives the burst's figures once it is over.
func (r *reconcileLags) result() map[string]interface{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	sorted := sortedCopy(r.lags)
	span := float64(r.last-r.firstStamp) / 1e9
	return map[string]interface{}{
		"reconciled_writes":       len(sorted),
		"reconciled_writes_per_s": round(float64(len(sorted))/span, 1),
		"latency_p50_ms":          round(percentile(sorted, 50), 2),
		"latency_p99_ms":          round(percentile(sorted, 99), 2),
		"latency_max_ms":          round(sorted[len(sorted)-1], 2),
	}
}

// resetPeakRSS resets VmHWM to the current RSS (Linux 4.0 and later).
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// runReconcile is client-go's dynamic informer with a rate-limiting work
// queue and `workers` workers, as a controller is written with client-go:
// the handlers add each object's MetaNamespaceKey, each worker gets a key,
// reads the object from the informer's indexer, reads its stamp and
// records the time since the write, and answers done (Forget, Done). After
// sync it waits until the reconciles of the initial list are done, then
// prints the synced line (the script starts the burst) and measures the
// burst until every written object has been reconciled in its new state.
func runReconcile(args []string) error {
	start := time.Now()
	fs := flag.NewFlagSet("reconcile", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the test server")
	dataset := fs.String("dataset", "crd", "crd or configmap")
	burstID := fs.String("burst-id", "", "reconcile updates stamped by this burst (empty: no burst)")
	burstCount := fs.Int("burst-count", 0, "updates the burst writes, each to another object")
	workers := fs.Int("workers", 4, "workers taking keys from the queue")
	settle := fs.Duration("settle", 3*time.Second, "wait after the initial reconciles before reading steady RSS")
	timeout := fs.Duration("timeout", 15*time.Minute, "give up after this long")
	fs.Parse(args)

	gvr, client, err := dynamicClient(*dataset, *kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, metav1.NamespaceAll, nil)
	informer := factory.ForResource(gvr).Informer()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer queue.ShutDown()
	if _, err := informer.AddEventHandler(enqueueHandler(queue)); err != nil {
		return err
	}
	lags := newReconcileLags(*burstID, *burstCount)
	indexer := informer.GetIndexer()
	reconcile := func(key string) error {
		obj, exists, err := indexer.GetByKey(key)
		if err != nil {
			return err
		}
		if !exists {
			obj = nil // deleted: nothing to do
		}
		lags.observe(key, obj)
		return nil
	}

	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("not synced within %v", *timeout)
	}
	syncS := since(start)
	for i := 0; i < *workers; i++ {
		go runWorker(queue, reconcile)
	}
	objects := len(indexer.ListKeys())
	// The initial list queued every object: its reconciles come first.
	if err := lags.waitInitial(ctx, queue, objects); err != nil {
		return err
	}
	result := map[string]interface{}{
		"peer": "client-go", "dataset": *dataset, "objects": objects, "workers": *workers,
		"sync_s": round(syncS, 3), "initial_reconciled_s": round(since(start), 3),
		"initial_reconciles": lags.reconciles.Load(), "cpu_sync_s": round(cpuSeconds(), 3),
	}
	time.Sleep(*settle)
	result["rss_steady_mb"] = round(procStatusMB("VmRSS"), 1)
	result["peak_rss_reset"] = resetPeakRSS()
	before := lags.reconciles.Load()
	cpuBefore := cpuSeconds()
	emit(map[string]interface{}{"event": "synced", "peer": "client-go", "objects": objects})

	if *burstID != "" && *burstCount > 0 {
		burst, err := lags.waitBurst(ctx, before, cpuBefore)
		if err != nil {
			return err
		}
		for k, v := range burst {
			result[k] = v
		}
		result["burst_updates"] = *burstCount
	}
	result["rss_end_mb"] = round(procStatusMB("VmRSS"), 1)
	result["cpu_total_s"] = round(cpuSeconds(), 3)
	emit(result)
	return nil
}

// enqueueHandler adds the key of every object an event names, as client-go's
// controllers do (a deleted object's key through DeletedFinalStateUnknown).
func enqueueHandler(queue workqueue.TypedRateLimitingInterface[string]) cache.ResourceEventHandlerFuncs {
	add := func(obj interface{}) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(_, newObj interface{}) { add(newObj) },
		DeleteFunc: func(obj interface{}) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				queue.Add(key)
			}
		},
	}
}

// runWorker is client-go's worker loop: get a key, reconcile it, forget its
// failures or retry it rate limited, done.
func runWorker(queue workqueue.TypedRateLimitingInterface[string], reconcile func(string) error) {
	for {
		key, quit := queue.Get()
		if quit {
			return
		}
		if err := reconcile(key); err != nil {
			queue.AddRateLimited(key)
		} else {
			queue.Forget(key)
		}
		queue.Done(key)
	}
}
