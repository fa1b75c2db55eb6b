package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// indexersFor are the Go twins of the three JMESPath indexes the Rust peer
// declares (bench/peers/src/common.rs).
func indexersFor(dataset string) cache.Indexers {
	str := func(obj interface{}, fields ...string) []string {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		v, found, err := unstructured.NestedString(u.Object, fields...)
		if err != nil || !found {
			return nil
		}
		return []string{v}
	}
	app := func(obj interface{}) ([]string, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil, nil
		}
		if v, ok := u.GetLabels()["app"]; ok {
			return []string{v}, nil
		}
		return nil, nil
	}
	if dataset == "crd" {
		return cache.Indexers{
			// metadata.labels.app
			"app": app,
			// spec.nodeName
			"node": func(obj interface{}) ([]string, error) { return str(obj, "spec", "nodeName"), nil },
			// spec.tags
			"tag": func(obj interface{}) ([]string, error) {
				u, ok := obj.(*unstructured.Unstructured)
				if !ok {
					return nil, nil
				}
				v, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "tags")
				return v, nil
			},
		}
	}
	return cache.Indexers{
		// metadata.labels.app
		"app": app,
		// data.nodeName
		"node": func(obj interface{}) ([]string, error) { return str(obj, "data", "nodeName"), nil },
		// keys(data)
		"key": func(obj interface{}) ([]string, error) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return nil, nil
			}
			data, _, _ := unstructured.NestedMap(u.Object, "data")
			keys := make([]string, 0, len(data))
			for k := range data {
				keys = append(keys, k)
			}
			return keys, nil
		},
	}
}

// stampOf returns the write time stamped by the burst `id`, if the object
// carries one.
func stampOf(obj interface{}, id string) (int64, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return 0, false
	}
	v, ok := u.GetAnnotations()[stampAnnotation]
	if !ok || !strings.HasPrefix(v, id+":") {
		return 0, false
	}
	n, err := strconv.ParseInt(v[len(id)+1:], 10, 64)
	return n, err == nil
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if cur >= v || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// runPeer is client-go's dynamic shared informer with the benchmark's three
// indexes and two handlers; it measures itself and prints JSON lines.
func runPeer(args []string) error {
	start := time.Now()
	fs := flag.NewFlagSet("peer", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the test server")
	dataset := fs.String("dataset", "crd", "crd or configmap")
	strip := fs.Bool("strip-managed-fields", false, "drop metadata.managedFields before caching (SetTransform)")
	burstID := fs.String("burst-id", "", "count updates stamped by this burst (empty: no burst)")
	burstCount := fs.Int("burst-count", 0, "updates the burst writes")
	queries := fs.Int("queries", 20000, "by_index calls to time")
	settle := fs.Duration("settle", 3*time.Second, "wait after sync before reading steady RSS")
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
	if err := informer.AddIndexers(indexersFor(*dataset)); err != nil {
		return err
	}
	if *strip {
		if err := informer.SetTransform(func(obj interface{}) (interface{}, error) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				u.SetManagedFields(nil)
			}
			return obj, nil
		}); err != nil {
			return err
		}
	}

	// Handler 1 records the lag of every stamped update; handler 2 keeps a
	// per-namespace tally, the kind of bookkeeping a controller does.
	want := int64(*burstCount)
	lags := make([]float64, 0, *burstCount)
	var seen1, seen2 atomic.Int64
	var lastSeen atomic.Int64
	var firstStamp atomic.Int64
	done := make(chan struct{})
	var closed atomic.Bool
	finish := func(n int64, other *atomic.Int64) {
		if n == want && other.Load() >= want && closed.CompareAndSwap(false, true) {
			close(done)
		}
	}
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, newObj interface{}) {
			if *burstID == "" {
				return
			}
			stamp, ok := stampOf(newObj, *burstID)
			if !ok {
				return
			}
			now := time.Now().UnixNano()
			lags = append(lags, float64(now-stamp)/1e6)
			for {
				cur := firstStamp.Load()
				if (cur != 0 && cur <= stamp) || firstStamp.CompareAndSwap(cur, stamp) {
					break
				}
			}
			storeMax(&lastSeen, now)
			finish(seen1.Add(1), &seen2)
		},
	})
	if err != nil {
		return err
	}
	perNamespace := map[string]int{}
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				perNamespace[u.GetNamespace()]++
			}
		},
		UpdateFunc: func(_, newObj interface{}) {
			if *burstID == "" {
				return
			}
			if _, ok := stampOf(newObj, *burstID); ok {
				storeMax(&lastSeen, time.Now().UnixNano())
				finish(seen2.Add(1), &seen1)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				perNamespace[u.GetNamespace()]--
			}
		},
	})
	if err != nil {
		return err
	}

	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("not synced within %v", *timeout)
	}
	syncS := since(start)
	cpuSync := cpuSeconds()
	rssSync := procStatusMB("VmRSS")
	time.Sleep(*settle)
	rssSteady := procStatusMB("VmRSS")
	objects := len(informer.GetStore().ListKeys())

	// by_index on the node index: about objects/1000 hits per call.
	indexer := informer.GetIndexer()
	rng := rand.New(rand.NewSource(1))
	values := make([]string, *queries)
	for i := range values {
		values[i] = "node-" + strconv.Itoa(rng.Intn(nodes))
	}
	// One untimed pass first, as every peer does.
	for _, v := range values {
		indexer.ByIndex("node", v)
	}
	durs := make([]float64, 0, *queries)
	hits := 0
	for _, v := range values {
		t := time.Now()
		items, err := indexer.ByIndex("node", v)
		d := time.Since(t)
		if err != nil {
			return err
		}
		hits += len(items)
		durs = append(durs, float64(d.Nanoseconds())/1e3)
	}
	sortedDurs := sortedCopy(durs)

	result := map[string]interface{}{
		"peer": "client-go", "dataset": *dataset, "objects": objects, "strip": *strip,
		"sync_s": round(syncS, 3), "cpu_sync_s": round(cpuSync, 3),
		"rss_sync_mb": round(rssSync, 1), "rss_steady_mb": round(rssSteady, 1),
		"by_index_p50_us":   round(percentile(sortedDurs, 50), 2),
		"by_index_p99_us":   round(percentile(sortedDurs, 99), 2),
		"by_index_hits_avg": round(float64(hits)/float64(max(1, len(values))), 1),
	}
	// Burst CPU is counted from here, after the by_index queries.
	cpuBeforeBurst := cpuSeconds()
	emit(map[string]interface{}{"event": "synced", "peer": "client-go", "objects": objects})

	if *burstID != "" && want > 0 {
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("burst: saw %d and %d of %d updates before the deadline", seen1.Load(), seen2.Load(), want)
		}
		sortedLags := sortedCopy(lags)
		span := float64(lastSeen.Load()-firstStamp.Load()) / 1e9
		result["burst_updates"] = want
		result["burst_updates_per_s"] = round(float64(want)/span, 1)
		result["lag_p50_ms"] = round(percentile(sortedLags, 50), 2)
		result["lag_p99_ms"] = round(percentile(sortedLags, 99), 2)
		result["lag_max_ms"] = round(sortedLags[len(sortedLags)-1], 2)
		time.Sleep(*settle)
	}
	result["rss_end_mb"] = round(procStatusMB("VmRSS"), 1)
	result["rss_peak_mb"] = round(procStatusMB("VmHWM"), 1)
	result["cpu_total_s"] = round(cpuSeconds(), 3)
	result["cpu_burst_s"] = round(cpuSeconds()-cpuBeforeBurst, 3)
	emit(result)
	cancel()
	return nil
}
