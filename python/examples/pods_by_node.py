"""Pods by node, from an index: the pods of each node without a request per
node. Run with the kubeconfig as kubectl finds it, or give one:

    python examples/pods_by_node.py [KUBECONFIG]
"""

from __future__ import annotations

import sys

from kube_dynamic_informer import Factory, NotSyncedError


def main(kubeconfig: str | None) -> int:
    with Factory(kubeconfig) as factory:
        pods = factory.informer("pods", indexes={"node": "spec.nodeName"})
        factory.start()
        try:
            pods.wait_for_sync(timeout=60)
        except NotSyncedError as e:
            print(f"pods did not sync ({e.reason}): {e}", file=sys.stderr)
            return 1
        print(f"{len(pods)} pods")
        for node in sorted(pods.index_values("node")):
            names = sorted(p.key or "" for p in pods.by_index("node", node))
            print(f"{node}: {len(names)} pods: {', '.join(names[:5])}{' ...' if len(names) > 5 else ''}")
        unscheduled = len(pods) - sum(len(pods.index_keys("node", n)) for n in pods.index_values("node"))
        print(f"not scheduled: {unscheduled}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else None))
