package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// forEach runs fn(i) for i in [from, to) on `workers` goroutines, stopping at
// the first error or when ctx ends.
func forEach(ctx context.Context, from, to, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
		firstErr = ctx.Err()
	}
	return firstErr
}

// withRetry retries transient server errors (throttling, timeouts) a few times.
func withRetry(ctx context.Context, fn func() error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = fn(); err == nil {
			return nil
		}
		if !(apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsInternalError(err)) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(200*(attempt+1)) * time.Millisecond):
		}
	}
	return err
}

func apply(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	return withRetry(ctx, func() error {
		_, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		return err
	})
}

// ensureCRD installs the Widget CRD and waits until it is served.
func ensureCRD(ctx context.Context, client dynamic.Interface) error {
	if err := apply(ctx, client.Resource(crdGVR), widgetCRD()); err != nil {
		return fmt.Errorf("applying the Widget CRD: %w", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := client.Resource(widgetGVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("widgets not served 60s after creating the CRD: %w", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// runLoad creates objects [from, to) of a dataset (server-side applies
// those that already exist, so a second load converges on the same data).
func runLoad(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the test server")
	dataset := fs.String("dataset", "crd", "crd or configmap")
	from := fs.Int("from", 0, "first object number")
	to := fs.Int("to", 1000, "one past the last object number")
	workers := fs.Int("concurrency", 16, "requests in flight")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	fs.Parse(args)

	gvr, client, err := dynamicClient(*dataset, *kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	for n := 0; n < namespaces; n++ {
		ns := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]interface{}{"name": namespaceOf(n)},
		}}
		if err := apply(ctx, client.Resource(nsGVR), ns); err != nil {
			return fmt.Errorf("namespace %s: %w", namespaceOf(n), err)
		}
	}
	if *dataset == "crd" {
		if err := ensureCRD(ctx, client); err != nil {
			return err
		}
	}
	start := time.Now()
	err = forEach(ctx, *from, *to, *workers, func(ctx context.Context, i int) error {
		obj := objectOf(*dataset, i)
		ri := client.Resource(gvr).Namespace(obj.GetNamespace())
		err := withRetry(ctx, func() error {
			_, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
			if apierrors.IsAlreadyExists(err) {
				_, err = ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("applying %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	elapsed := since(start)
	emit(map[string]interface{}{
		"loaded": *dataset, "from": *from, "to": *to,
		"seconds": round(elapsed, 2), "per_second": round(float64(*to-*from)/elapsed, 1),
	})
	return nil
}

// runBurst writes `count` updates, each stamping one object with the time it
// was sent, as fast as `concurrency` requests in flight allow.
func runBurst(args []string) error {
	fs := flag.NewFlagSet("burst", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the test server")
	dataset := fs.String("dataset", "crd", "crd or configmap")
	objects := fs.Int("objects", 1000, "objects in the dataset (updates cycle through them)")
	count := fs.Int("count", 20000, "updates to write")
	workers := fs.Int("concurrency", 32, "requests in flight")
	burstID := fs.String("id", "b1", "burst id written in front of each stamp")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	fs.Parse(args)

	gvr, client, err := dynamicClient(*dataset, *kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	// Request latency (stamp to response) of each write, so that readers can
	// tell the server's share of the handler lag from the informer's.
	latencies := make([]float64, *count)
	start := time.Now()
	err = forEach(ctx, 0, *count, *workers, func(ctx context.Context, k int) error {
		i := k % *objects
		ns, name := namespaceOf(i), nameOf(*dataset, i)
		return withRetry(ctx, func() error {
			sent := time.Now()
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"%s:%d"}}}`, stampAnnotation, *burstID, sent.UnixNano())
			_, err := client.Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			latencies[k] = float64(time.Since(sent).Microseconds()) / 1e3
			return err
		})
	})
	if err != nil {
		return err
	}
	elapsed := since(start)
	sorted := sortedCopy(latencies)
	emit(map[string]interface{}{
		"burst": *burstID, "count": *count, "seconds": round(elapsed, 2),
		"writes_per_second":    round(float64(*count)/elapsed, 1),
		"write_latency_p50_ms": round(percentile(sorted, 50), 2),
		"write_latency_p99_ms": round(percentile(sorted, 99), 2),
	})
	return nil
}
