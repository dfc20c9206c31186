"""`make demo`: check every example target and print the verdicts as a table."""
from __future__ import annotations

import glob
import os
import sys
import time

from .api import CheckOptions, check_target


def example_options(module, name: str, **kw) -> CheckOptions:
    """How an example variant is checked: its launch values (the module's PARAMS), the
    architecture it is traced for (its ARCH) and any other
    option the module gives the variant (its OPTIONS: e.g. a shorter time limit for a search
    that does not complete, or bug hunts beside the search for a state space too large for a
    plain BFS to reach the bug)."""
    kw.setdefault("arch", getattr(module, "ARCH", "sm_90a"))
    own = dict(getattr(module, "OPTIONS", {}).get(name, {}))
    if "timeout_s" in own and "timeout_s" in kw:  # the shorter of the two limits
        own["timeout_s"] = min(own["timeout_s"], kw["timeout_s"])
    kw.update(own)
    return CheckOptions(params=getattr(module, "PARAMS", {}).get(name, {}), **kw)


def example_targets(root: str = "examples") -> list[tuple[str, str, CheckOptions]]:
    """(target, expected verdict or kind, options) for every name in each example module's
    TARGETS list (or its VARIANTS dict), with EXPECT and PARAMS from the module
    when it has them."""
    out = []
    for path in sorted(glob.glob(os.path.join(root, "*.py"))):
        if os.path.basename(path).startswith("_"):
            continue
        try:
            module = _module(path)
        except ValueError as e:
            out.append((f"{path}:?", f"error: {e}", CheckOptions(timeout_s=300)))
            continue
        expect = getattr(module, "EXPECT", {})
        for name in getattr(module, "TARGETS", None) or list(getattr(module, "VARIANTS", {})):
            out.append((f"{path}:{name}", expect.get(name, "?"),
                        example_options(module, name, timeout_s=300)))
    return out


def _module(path: str):
    import importlib.util
    name = "warpspin_demo_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        raise ValueError(f"{type(e).__name__}: {e}") from e
    return mod


def main() -> int:
    rows = []
    mismatches = 0
    for target, expected, opts in example_targets():
        t0 = time.perf_counter()
        for r in check_target(target, opts):
            got = r.outcome
            where = ""
            if r.violations and r.violations[0].locations:
                loc = r.violations[0].locations[0]
                where = f"{os.path.basename(loc.file)}:{loc.line}"
            elif r.reasons:
                where = r.reasons[0][:60]
            ok = got in expected.split("|")  # "a|b": either kind
            mismatches += not ok
            rows.append((target, got, where, f"{r.stats.states:,}", f"{time.perf_counter() - t0:.1f}",
                         "ok" if ok else f"EXPECTED {expected}"))
    head = ("target", "verdict", "where", "states", "s", "")
    widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
    for row in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    print(f"\n{len(rows)} targets, {mismatches} not as expected")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
