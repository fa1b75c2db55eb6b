package main

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The benchmark's datasets. Objects are generated from their number alone, so
// every run of the loader writes the same data.

const (
	namespaces = 10
	apps       = 100
	nodes      = 1000
	tags       = 20
	// StampAnnotation holds "<burst id>:<unix nanos of the write>"; handlers
	// compute their lag from it.
	stampAnnotation = "bench.kdi.dev/stamp"
	fieldManager    = "bench-loader"
)

var (
	widgetGVR    = schema.GroupVersionResource{Group: "bench.kdi.dev", Version: "v1", Resource: "widgets"}
	configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	crdGVR       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	nsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

func gvrOf(dataset string) (schema.GroupVersionResource, error) {
	switch dataset {
	case "crd":
		return widgetGVR, nil
	case "configmap":
		return configMapGVR, nil
	}
	return schema.GroupVersionResource{}, fmt.Errorf("unknown dataset %q (crd or configmap)", dataset)
}

func namespaceOf(i int) string { return "bench-" + strconv.Itoa(i%namespaces) }

func nameOf(dataset string, i int) string {
	if dataset == "crd" {
		return fmt.Sprintf("widget-%06d", i)
	}
	return fmt.Sprintf("cm-%06d", i)
}

func labelsOf(i int) map[string]interface{} {
	tiers := []string{"frontend", "backend", "cache"}
	return map[string]interface{}{
		"app":                          "app-" + strconv.Itoa(i%apps),
		"app.kubernetes.io/name":       "widget",
		"app.kubernetes.io/part-of":    "shop-" + strconv.Itoa(i%20),
		"app.kubernetes.io/managed-by": "bench-operator",
		"tier":                         tiers[i%3],
		"release":                      []string{"stable", "canary"}[i%7/6],
	}
}

func tagsOf(i int) []interface{} {
	return []interface{}{
		"tag-" + strconv.Itoa(i%tags),
		"tag-" + strconv.Itoa((i/tags)%tags),
		"tag-" + strconv.Itoa((i*7+3)%tags),
	}
}

// widget is one custom resource of about 2 KB once the server has added its
// metadata and managedFields.
func widget(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "bench.kdi.dev/v1",
		"kind":       "Widget",
		"metadata": map[string]interface{}{
			"name":      nameOf("crd", i),
			"namespace": namespaceOf(i),
			"labels":    labelsOf(i),
			"annotations": map[string]interface{}{
				"bench.kdi.dev/owner": "team-" + strconv.Itoa(i%37),
			},
		},
		"spec": map[string]interface{}{
			"replicas": int64(1 + i%5),
			"nodeName": "node-" + strconv.Itoa(i%nodes),
			"image":    fmt.Sprintf("registry.example.com/shop/widget:v1.%d.3", i%40),
			"tags":     tagsOf(i),
			"resources": map[string]interface{}{
				"cpu":    "250m",
				"memory": "256Mi",
			},
			"env": []interface{}{
				map[string]interface{}{"name": "LOG_LEVEL", "value": "info"},
				map[string]interface{}{"name": "REGION", "value": "eu-west-1"},
				map[string]interface{}{"name": "WIDGET_ID", "value": strconv.Itoa(i)},
			},
			"ports": []interface{}{
				map[string]interface{}{"name": "http", "port": int64(8080), "protocol": "TCP"},
				map[string]interface{}{"name": "metrics", "port": int64(9090), "protocol": "TCP"},
			},
		},
		"status": map[string]interface{}{
			"phase":              "Running",
			"observedGeneration": int64(1),
			"readyReplicas":      int64(1 + i%5),
			"conditions": []interface{}{
				map[string]interface{}{
					"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z",
					"reason": "MinimumReplicasAvailable", "message": "All replicas are ready and serving.",
				},
				map[string]interface{}{
					"type": "Progressing", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z",
					"reason": "NewReplicaSetAvailable", "message": "Rollout of revision 3 has completed.",
				},
			},
		},
	}}
}

// configMap is a ConfigMap the size of a typical pod (about 4-5 KB with its
// managedFields).
func configMap(i int) *unstructured.Unstructured {
	props := make([]string, 0, 80)
	for k := 0; k < 80; k++ {
		props = append(props, fmt.Sprintf("service.component%02d.setting = value-%d-%d", k, i, k))
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata": map[string]interface{}{
			"name":      nameOf("configmap", i),
			"namespace": namespaceOf(i),
			"labels":    labelsOf(i),
			"annotations": map[string]interface{}{
				"bench.kdi.dev/owner": "team-" + strconv.Itoa(i%37),
			},
		},
		"data": map[string]interface{}{
			"nodeName":               "node-" + strconv.Itoa(i%nodes),
			"log-level":              "info",
			"region":                 "eu-west-1",
			"application.properties": strings.Join(props, "\n"),
			"tags":                   strings.Join([]string{"a", "b"}, ","),
		},
	}}
}

func objectOf(dataset string, i int) *unstructured.Unstructured {
	if dataset == "crd" {
		return widget(i)
	}
	return configMap(i)
}

// widgetCRD declares Widget with a structural schema, so server-side apply
// tracks fields one by one, as for a real operator's CRD.
func widgetCRD() *unstructured.Unstructured {
	str := map[string]interface{}{"type": "string"}
	integer := map[string]interface{}{"type": "integer"}
	keyedList := func(key string, props map[string]interface{}) map[string]interface{} {
		return map[string]interface{}{
			"type":                       "array",
			"x-kubernetes-list-type":     "map",
			"x-kubernetes-list-map-keys": []interface{}{key},
			"items": map[string]interface{}{
				"type": "object", "required": []interface{}{key}, "properties": props,
			},
		}
	}
	schemaDoc := map[string]interface{}{
		"type": "object",
		"properties": map[string]interface{}{
			"spec": map[string]interface{}{
				"type": "object",
				"properties": map[string]interface{}{
					"replicas": integer,
					"nodeName": str,
					"image":    str,
					"tags":     map[string]interface{}{"type": "array", "items": str},
					"resources": map[string]interface{}{
						"type":       "object",
						"properties": map[string]interface{}{"cpu": str, "memory": str},
					},
					"env":   keyedList("name", map[string]interface{}{"name": str, "value": str}),
					"ports": keyedList("name", map[string]interface{}{"name": str, "port": integer, "protocol": str}),
				},
			},
			"status": map[string]interface{}{
				"type": "object",
				"properties": map[string]interface{}{
					"phase":              str,
					"observedGeneration": integer,
					"readyReplicas":      integer,
					"conditions": keyedList("type", map[string]interface{}{
						"type": str, "status": str, "lastTransitionTime": str, "reason": str, "message": str,
					}),
				},
			},
		},
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]interface{}{"name": "widgets.bench.kdi.dev"},
		"spec": map[string]interface{}{
			"group": "bench.kdi.dev",
			"scope": "Namespaced",
			"names": map[string]interface{}{
				"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
			},
			"versions": []interface{}{map[string]interface{}{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]interface{}{"openAPIV3Schema": schemaDoc},
			}},
		},
	}}
}
