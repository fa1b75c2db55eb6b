"""Events with asyncio: `async for` over an informer's events, the cache
first. Prints the first N events of a resource (default: 10 configmaps):

    python examples/asyncio_events.py [RESOURCE] [N] [KUBECONFIG]
"""

from __future__ import annotations

import asyncio
import sys

from kube_dynamic_informer import Factory


async def main(resource: str, count: int, kubeconfig: str | None) -> int:
    with Factory(kubeconfig) as factory:
        informer = factory.informer(resource)
        factory.start()
        await informer.synced(60)
        seen = 0
        async with informer.events() as events:
            async for event in events:
                print(event.kind, event.object.key)
                seen += 1
                if seen >= min(count, len(informer)):
                    break
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(
        asyncio.run(
            main(
                args[0] if args else "configmaps",
                int(args[1]) if len(args) > 1 else 10,
                args[2] if len(args) > 2 else None,
            )
        )
    )
