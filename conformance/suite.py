"""Every litmus kernel of the suite, in a fixed order."""
from . import mbarrier

MODULES = [mbarrier]
for _name in ("named", "cluster", "warp", "values", "tensormaps", "buffers", "cp_async",
              "flags", "tcgen05", "clc", "data", "wgmma"):
    try:
        MODULES.append(__import__(f"conformance.{_name}", fromlist=["LITMUS"]))
    except ModuleNotFoundError as e:
        if e.name != f"conformance.{_name}":
            raise

ALL = [cls for m in MODULES for cls in m.LITMUS]


def by_name(name: str):
    for cls in ALL:
        if cls.__name__ == name:
            return cls()
    raise KeyError(name)
