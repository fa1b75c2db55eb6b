package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// requestCounter counts what one client asks the server for, so that the
// result says whether the informers listed or streamed their initial state.
type requestCounter struct {
	next                        http.RoundTripper
	lists, watches, streamLists *atomic.Int64
}

func (c requestCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	switch {
	case q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true":
		c.streamLists.Add(1)
	case q.Get("watch") == "true":
		c.watches.Add(1)
	default:
		c.lists.Add(1)
	}
	return c.next.RoundTrip(req)
}

// slim keeps what the informer needs to key and count an object. The
// figures of this command are the server's; 100 caches of whole objects
// would only fill this machine's memory, while the informers still read,
// decode and store every object as they would.
func slim(obj interface{}) (interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	s := &unstructured.Unstructured{Object: map[string]interface{}{}}
	s.SetAPIVersion(u.GetAPIVersion())
	s.SetKind(u.GetKind())
	s.SetNamespace(u.GetNamespace())
	s.SetName(u.GetName())
	s.SetUID(u.GetUID())
	s.SetResourceVersion(u.GetResourceVersion())
	return s, nil
}

// runMany starts N client-go dynamic informers at once, each with a client
// and a connection of its own, as N programs would, waits until every one
// has synced and checks each holds the expected objects.
func runMany(args []string) error {
	fs := flag.NewFlagSet("many", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the server to sync from")
	dataset := fs.String("dataset", "crd", "crd or configmap")
	n := fs.Int("n", 100, "informers to start at once")
	namespace := fs.String("namespace", "", "namespace to watch (empty: all)")
	expect := fs.Int("expect", -1, "objects each informer must hold once synced (-1: no check)")
	timeout := fs.Duration("timeout", 15*time.Minute, "give up after this long")
	fs.Parse(args)

	if *n < 1 {
		return fmt.Errorf("-n %d: at least one informer", *n)
	}
	gvr, err := gvrOf(*dataset)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	var lists, watches, streamLists atomic.Int64
	informers := make([]cache.SharedIndexInformer, *n)
	factories := make([]dynamicinformer.DynamicSharedInformerFactory, *n)
	for i := range informers {
		cfg, err := restConfig(*kubeconfig)
		if err != nil {
			return err
		}
		cfg.UserAgent = fmt.Sprintf("kdi-bench-many/%d", i)
		// client-go shares one transport, and so one HTTP/2 connection,
		// between clients whose TLS settings are equal; a dial function of
		// each client's own (client-go's defaults) keeps its transport out
		// of that cache, so each informer has its connection, as separate
		// programs would.
		cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return requestCounter{next: rt, lists: &lists, watches: &watches, streamLists: &streamLists}
		})
		client, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		factories[i] = dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, *namespace, nil)
		informers[i] = factories[i].ForResource(gvr).Informer()
		if err := informers[i].SetTransform(slim); err != nil {
			return err
		}
	}

	syncs := make([]float64, *n)
	var wg sync.WaitGroup
	start := time.Now()
	for i, f := range factories {
		f.Start(ctx.Done())
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-informers[i].HasSyncedChecker().Done():
				syncs[i] = since(start)
			case <-ctx.Done():
				syncs[i] = -1
			}
		}()
	}
	wg.Wait()
	allSynced := since(start)
	for i, s := range syncs {
		if s < 0 {
			return fmt.Errorf("informer %d of %d not synced within %v", i, *n, *timeout)
		}
	}
	cpuSync := cpuSeconds()

	objects := make([]int, *n)
	var short []string
	for i, inf := range informers {
		objects[i] = len(inf.GetStore().ListKeys())
		if *expect >= 0 && objects[i] != *expect {
			short = append(short, fmt.Sprintf("informer %d holds %d", i, objects[i]))
		}
	}
	if len(short) > 0 {
		return fmt.Errorf("expected %d objects each: %s", *expect, strings.Join(short, ", "))
	}

	sorted := sortedCopy(syncs)
	sort.Ints(objects)
	emit(map[string]interface{}{
		"peer": "many", "dataset": *dataset, "namespace": *namespace, "informers": *n,
		"objects_min": objects[0], "objects_max": objects[len(objects)-1],
		"all_synced_s": round(allSynced, 3),
		"sync_p50_s":   round(percentile(sorted, 50), 3),
		"sync_p99_s":   round(percentile(sorted, 99), 3),
		"cpu_sync_s":   round(cpuSync, 3),
		"rss_peak_mb":  round(procStatusMB("VmHWM"), 1),
		// What the informers asked for: full lists, watches, and watches
		// that stream the initial state (client-go's default).
		"lists": lists.Load(), "watches": watches.Load(), "streaming_lists": streamLists.Load(),
	})
	cancel()
	for _, f := range factories {
		f.Shutdown()
	}
	return nil
}
