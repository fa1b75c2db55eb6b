"""A handler added after the cache has synced receives every cached object
first (as `Add` events with `in_initial_list`), then live events. Watches
the resource named on the command line (default: configmaps) for a few
seconds:

    python examples/late_handler.py [RESOURCE] [SECONDS] [KUBECONFIG]
"""

from __future__ import annotations

import sys
import time

from kube_dynamic_informer import Event, Factory


def main(resource: str, seconds: float, kubeconfig: str | None) -> int:
    with Factory(kubeconfig) as factory:
        informer = factory.informer(resource)
        factory.start()
        informer.wait_for_sync(timeout=60)
        print(f"{informer.resource}: {len(informer)} cached")

        replayed = 0

        def handle(event: Event) -> None:
            nonlocal replayed
            if event.in_initial_list:
                replayed += 1
            else:
                print(f"{event.kind} {event.object.key} rv={event.object.resource_version}")

        handler = informer.on_event(handle)
        time.sleep(seconds)
        handler.remove()
        print(f"the late handler received the {replayed} cached objects first")
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(
        main(
            args[0] if args else "configmaps",
            float(args[1]) if len(args) > 1 else 2.0,
            args[2] if len(args) > 2 else None,
        )
    )
