package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// runInformers runs client-go's dynamic shared informer (of the same release
// as this control plane) once per kubeconfig, all on one resource, and
// answers commands on stdin, one JSON line on stdout each:
//
//	sync TIMEOUT    every informer has synced
//	equal TIMEOUT   every informer holds what a fresh list from the first
//	                kubeconfig (the API server) holds, object for object
//	stats           requests (lists, streaming lists among them, watches)
//	                and events each informer saw
//
// The integration tests run it as an oracle: an informer that reads through
// `kdi serve` must stay equal to one that reads the API server.
func runInformers(args []string) error {
	fs := flag.NewFlagSet("informers", flag.ContinueOnError)
	resource := fs.String("resource", "", "GROUP/VERSION/RESOURCE (\"\" group for the core API: /v1/configmaps)")
	namespace := fs.String("namespace", "", "only this namespace (default: all)")
	var kubeconfigs multiFlag
	fs.Var(&kubeconfigs, "kubeconfig", "NAME=PATH of a server to inform from (repeatable; the first is the truth `equal` lists)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	parts := strings.Split(*resource, "/")
	if len(parts) != 3 {
		return fmt.Errorf("-resource %q: expected GROUP/VERSION/RESOURCE", *resource)
	}
	gvr := schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]}
	if len(kubeconfigs) == 0 {
		return fmt.Errorf("no -kubeconfig NAME=PATH given")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var peers []*peer
	for _, kc := range kubeconfigs {
		name, path, ok := strings.Cut(kc, "=")
		if !ok {
			return fmt.Errorf("-kubeconfig %q: expected NAME=PATH", kc)
		}
		p, err := startPeer(ctx, name, path, gvr, *namespace)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		peers = append(peers, p)
	}

	out := json.NewEncoder(os.Stdout)
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) == 0 {
			continue
		}
		var reply map[string]any
		switch fields[0] {
		case "sync", "equal":
			timeout := 30 * time.Second
			if len(fields) > 1 {
				d, err := time.ParseDuration(fields[1])
				if err != nil {
					reply = map[string]any{"ok": false, "error": err.Error()}
					break
				}
				timeout = d
			}
			if fields[0] == "sync" {
				reply = waitSynced(peers, timeout)
			} else {
				reply = waitEqual(ctx, peers, gvr, *namespace, timeout)
			}
		case "stats":
			stats := map[string]any{}
			for _, p := range peers {
				stats[p.name] = p.stats()
			}
			reply = map[string]any{"ok": true, "stats": stats}
		default:
			reply = map[string]any{"ok": false, "error": fmt.Sprintf("unknown command %q (sync, equal, stats)", fields[0])}
		}
		if err := out.Encode(reply); err != nil {
			return err
		}
	}
	return lines.Err()
}

// peer is one informer and the client it reads through.
type peer struct {
	name           string
	client         dynamic.NamespaceableResourceInterface
	informer       cache.SharedIndexInformer
	lists          atomic.Int64
	streamingLists atomic.Int64
	watches        atomic.Int64
	mu             sync.Mutex
	events         map[string]int
}

func startPeer(ctx context.Context, name, kubeconfig string, gvr schema.GroupVersionResource, namespace string) (*peer, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1
	cfg.UserAgent = "testenv-informers/" + name
	p := &peer{name: name, events: map[string]int{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			// A list is a list request or a streaming list (a watch
			// that sends the initial events first), which client-go
			// uses when the server supports it.
			query := req.URL.Query()
			switch {
			case query.Get("watch") != "true":
				p.lists.Add(1)
			case query.Get("sendInitialEvents") == "true":
				p.lists.Add(1)
				p.streamingLists.Add(1)
			default:
				p.watches.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	p.client = client.Resource(gvr)
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, namespaceOrAll(namespace), nil)
	p.informer = factory.ForResource(gvr).Informer()
	if _, err := p.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.count("added") },
		UpdateFunc: func(any, any) { p.count("updated") },
		DeleteFunc: func(any) { p.count("deleted") },
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	return p, nil
}

func namespaceOrAll(ns string) string {
	if ns == "" {
		return metav1.NamespaceAll
	}
	return ns
}

func (p *peer) count(kind string) {
	p.mu.Lock()
	p.events[kind]++
	p.mu.Unlock()
}

func (p *peer) stats() map[string]any {
	p.mu.Lock()
	events := map[string]int{}
	for k, v := range p.events {
		events[k] = v
	}
	p.mu.Unlock()
	return map[string]any{
		"synced":         p.informer.HasSynced(),
		"objects":        len(p.informer.GetStore().ListKeys()),
		"lists":          p.lists.Load(),
		"streamingLists": p.streamingLists.Load(),
		"watches":        p.watches.Load(),
		"events":         events,
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func waitSynced(peers []*peer, timeout time.Duration) map[string]any {
	deadline := time.Now().Add(timeout)
	for {
		var pending []string
		for _, p := range peers {
			if !p.informer.HasSynced() {
				pending = append(pending, p.name)
			}
		}
		if len(pending) == 0 {
			return map[string]any{"ok": true}
		}
		if time.Now().After(deadline) {
			return map[string]any{"ok": false, "error": "not synced: " + strings.Join(pending, ", ")}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitEqual waits until every informer's store holds exactly what a fresh
// list (a quorum read) from the first peer's server holds.
func waitEqual(ctx context.Context, peers []*peer, gvr schema.GroupVersionResource, namespace string, timeout time.Duration) map[string]any {
	deadline := time.Now().Add(timeout)
	for {
		truth, err := peers[0].client.Namespace(namespace).List(ctx, metav1.ListOptions{})
		var diffs []string
		if err != nil {
			diffs = []string{"listing the truth: " + err.Error()}
		} else {
			for _, p := range peers {
				if d := differences(p, truth.Items); d != "" {
					diffs = append(diffs, p.name+": "+d)
				}
			}
		}
		if len(diffs) == 0 {
			return map[string]any{"ok": true, "objects": len(truth.Items)}
		}
		if time.Now().After(deadline) {
			return map[string]any{"ok": false, "error": strings.Join(diffs, "; ")}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// differences says how the peer's store differs from `want`, or "".
func differences(p *peer, want []unstructured.Unstructured) string {
	if !p.informer.HasSynced() {
		return "not synced"
	}
	held := map[string]*unstructured.Unstructured{}
	for _, o := range p.informer.GetStore().List() {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return fmt.Sprintf("holds a %T", o)
		}
		held[u.GetNamespace()+"/"+u.GetName()] = u
	}
	var problems []string
	for i := range want {
		w := &want[i]
		key := w.GetNamespace() + "/" + w.GetName()
		h, ok := held[key]
		delete(held, key)
		switch {
		case !ok:
			problems = append(problems, "missing "+key)
		case h.GetResourceVersion() != w.GetResourceVersion():
			problems = append(problems, fmt.Sprintf("%s at %s, not %s", key, h.GetResourceVersion(), w.GetResourceVersion()))
		case !equality.Semantic.DeepEqual(h.Object, w.Object):
			problems = append(problems, key+" differs in content")
		}
	}
	for key := range held {
		problems = append(problems, "extra "+key)
	}
	sort.Strings(problems)
	if len(problems) > 5 {
		problems = append(problems[:5], fmt.Sprintf("and %d more", len(problems)-5))
	}
	return strings.Join(problems, ", ")
}
