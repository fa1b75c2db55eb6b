// Command kdi-bench is the Go side of the benchmark in scripts/bench:
//
//	load   server-side apply objects of a dataset (crd: Widgets of ~2 KB; configmap: ~4 KB)
//	burst  write N stamped updates with bounded concurrency
//	floor  list a resource page by page, counting bytes only
//	peer   client-go's dynamic shared informer with 3 indexes and 2 handlers
//	many   N dynamic shared informers, each its own client, syncing at once
//	reconcile  a dynamic informer, a rate-limiting work queue and N workers doing a trivial reconcile
//
// It talks only to the server named in the kubeconfig (the bundled testenv
// on 127.0.0.1).
package main

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// dynamicClient gives the resource of a dataset and a dynamic client for the
// test server.
func dynamicClient(dataset, kubeconfig string) (schema.GroupVersionResource, dynamic.Interface, error) {
	gvr, err := gvrOf(dataset)
	if err != nil {
		return gvr, nil, err
	}
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return gvr, nil, err
	}
	client, err := dynamic.NewForConfig(cfg)
	return gvr, client, err
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return nil, fmt.Errorf("no kubeconfig: pass -kubeconfig or set KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	// No client-side rate limit: the loader is bounded by its concurrency,
	// the informer issues a handful of requests.
	cfg.QPS = -1
	cfg.UserAgent = "kdi-bench"
	return cfg, nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kdi-bench load|burst|floor|peer|many|reconcile [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "load":
		err = runLoad(os.Args[2:])
	case "burst":
		err = runBurst(os.Args[2:])
	case "floor":
		err = runFloor(os.Args[2:])
	case "peer":
		err = runPeer(os.Args[2:])
	case "many":
		err = runMany(os.Args[2:])
	case "reconcile":
		err = runReconcile(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kdi-bench:", err)
		os.Exit(1)
	}
}
