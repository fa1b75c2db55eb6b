package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"time"

	"k8s.io/client-go/rest"
)

var continueRE = regexp.MustCompile(`"continue":"([^"]*)"`)

// tailWriter keeps the first and last few KiB of a response and counts the
// rest without keeping it.
type tailWriter struct {
	head, tail []byte
	n          int64
}

const keep = 8 << 10

func (w *tailWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	if room := keep - len(w.head); room > 0 {
		w.head = append(w.head, p[:min(room, len(p))]...)
	}
	w.tail = append(w.tail, p...)
	if len(w.tail) > 2*keep {
		w.tail = append(w.tail[:0], w.tail[len(w.tail)-keep:]...)
	}
	return len(p), nil
}

// runFloor lists a resource page by page (500 a page, like every informer
// here) and only counts the bytes: the least work any cache can do to sync.
func runFloor(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the test server")
	dataset := fs.String("dataset", "crd", "crd or configmap")
	page := fs.Int("page", 500, "objects per page")
	fs.Parse(args)

	start := time.Now()
	gvr, err := gvrOf(*dataset)
	if err != nil {
		return err
	}
	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		return err
	}
	// The informers under test read JSON uncompressed (client-go's watch-list
	// and both Rust peers); so does the floor.
	cfg.DisableCompression = true
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	prefix := "/api/" + gvr.Version
	if gvr.Group != "" {
		prefix = "/apis/" + gvr.Group + "/" + gvr.Version
	}
	var total int64
	pages := 0
	cont := ""
	ctx := context.Background()
	for {
		q := url.Values{"limit": {fmt.Sprint(*page)}}
		if cont != "" {
			q.Set("continue", cont)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+prefix+"/"+gvr.Resource+"?"+q.Encode(), nil)
		req.Header.Set("Accept", "application/json")
		resp, err := httpClient.Do(req)
		if err != nil {
			return err
		}
		w := &tailWriter{}
		_, err = io.Copy(w, resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("list page %d: HTTP %d: %s", pages, resp.StatusCode, w.head)
		}
		total += w.n
		pages++
		cont = ""
		for _, part := range [][]byte{w.head, w.tail} {
			if m := continueRE.FindSubmatch(part); m != nil {
				cont = string(bytes.TrimSpace(m[1]))
				break
			}
		}
		if cont == "" {
			break
		}
	}
	emit(map[string]interface{}{
		"peer": "floor", "dataset": *dataset, "sync_s": round(since(start), 3),
		"list_bytes": total, "pages": pages, "cpu_s": round(cpuSeconds(), 3),
		"rss_peak_mb": round(procStatusMB("VmHWM"), 1),
	})
	return nil
}
