"""Waits until a condition holds for the objects of a resource, answered
from the cache as events arrive (a small `kdi wait` / `kubectl wait`):

    python examples/wait_for.py RESOURCE GOAL [-n NAMESPACE] [-l SELECTOR]
                                [--any | --none] [--timeout SECONDS]
                                [--kubeconfig PATH] [NAME ...]

    python examples/wait_for.py deployments.apps \\
        'status.readyReplicas == spec.replicas' -n shop -l app=web
    python examples/wait_for.py pods condition=Ready -n shop web-0 web-1
    python examples/wait_for.py widgets delete -n shop old

GOAL is a JMESPath condition, `delete`, `create`, or kubectl's
`condition=TYPE[=STATUS]` and `jsonpath={.path}=VALUE`. Exits 0 when it
holds, 4 when the time ran out (naming the objects that did not hold), 1 on
an error.
"""

from __future__ import annotations

import argparse
import sys
from typing import Literal

from kube_dynamic_informer import ConditionTimeoutError, Factory, KubeDynamicInformerError


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("resource")
    parser.add_argument("goal")
    parser.add_argument("names", nargs="*")
    parser.add_argument("-n", "--namespace")
    parser.add_argument("-l", "--selector")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--any", action="store_true")
    which.add_argument("--none", action="store_true")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--kubeconfig")
    args = parser.parse_args(argv)
    quantifier: Literal["all", "any", "none"] = "any" if args.any else "none" if args.none else "all"
    try:
        with Factory(args.kubeconfig) as factory:
            informer = factory.informer(args.resource, namespace=args.namespace)
            factory.start()
            report = informer.wait_until(
                args.goal,
                args.names or None,
                namespace=args.namespace,
                label_selector=args.selector,
                quantifier=quantifier,
                timeout=args.timeout,
            )
            print(report)
            return 0
    except ConditionTimeoutError as timed_out:
        for outcome in timed_out.report.blocking:
            print(f"{outcome.key}: {outcome.reason}", file=sys.stderr)
        print(timed_out, file=sys.stderr)
        return 4
    except KubeDynamicInformerError as error:
        print(error, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
