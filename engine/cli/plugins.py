"""`invlab plugins`: every registered kernel, augmentation / orbit, likelihood and model family, and where each came
from (built in, a plugin package, or a module), then the plugins found and any that were skipped."""
from __future__ import annotations

import argparse
import json


def registered_parts() -> list[dict]:
    """One row per registered part: kind, name, where it came from, the class or function behind it, own options.
    Every kind comes from one `invlab.registry.Registry`: kernels, augmentations / orbits, likelihoods, Gram
    kernels, the RKHS family's data losses, invariance losses and kinds of functional, model families, named data
    sets and readers of your own files."""
    from .. import kernels, likelihoods, transforms
    from ..data.raw import DATASETS, READER_REGISTRY
    from ..kernels.gram import GRAM_REGISTRY
    from ..models.registry import MODEL_REGISTRY
    from ..models.rkhs import DATA_LOSS_REGISTRY, FUNCTIONAL_REGISTRY, INVARIANCE_LOSS_REGISTRY

    rows = []
    for kind, reg in (("kernel", kernels.REGISTRY), ("augmentation", transforms.REGISTRY),
                      ("likelihood", likelihoods.REGISTRY), ("gram kernel", GRAM_REGISTRY),
                      ("rkhs data loss", DATA_LOSS_REGISTRY), ("rkhs invariance loss", INVARIANCE_LOSS_REGISTRY),
                      ("rkhs functional", FUNCTIONAL_REGISTRY), ("model", MODEL_REGISTRY), ("data set", DATASETS),
                      ("reader", READER_REGISTRY)):
        for part in sorted(reg.parts.values(), key=lambda p: p.name) if kind == "model" else reg.parts.values():
            rows.append({"kind": kind, "name": part.name, "origin": part.origin, "defined_in": part.where,
                         "options": dict(part.options) if kind not in ("model", "data set", "reader") else {}})
    return rows


def cmd_plugins(argv: list[str]) -> int:
    """`invlab plugins ARGV`; returns the exit status."""
    from ..plugins import GROUP, load_plugins

    parser = argparse.ArgumentParser(prog="invlab plugins",
                                     description="List registered kernels, augmentations / orbits, likelihoods "
                                                 "and model families and where each came from (plugins: entry "
                                                 f"points in the group {GROUP}).")
    parser.add_argument("--json", action="store_true", help="One JSON object per line.")
    args = parser.parse_args(argv)
    plugins = load_plugins()
    rows = registered_parts()
    if args.json:
        for row in rows:
            print(json.dumps(row))
        for p in plugins:
            print(json.dumps({"kind": "plugin", "name": p.name, "module": p.module, "package": p.package,
                              "error": p.error, "refused": list(p.refused)}))
        return 0
    width = max(len(r["name"]) for r in rows)
    kind_width = max(len(r["kind"]) for r in rows)
    print(f"{'kind':<{kind_width}}  {'name':<{width}}  origin")
    for r in rows:
        flags = [f"{arg} (--{setting.replace('_', '-')})" for arg, setting in r["options"].items()]
        options = f"  options: {', '.join(flags)}" if flags else ""
        print(f"{r['kind']:<{kind_width}}  {r['name']:<{width}}  {r['origin']}  [{r['defined_in']}]{options}")
    if not plugins:
        print(f"no plugins installed (entry points in the group {GROUP})")
    for p in plugins:
        state = f"skipped: {p.error}" if p.error else \
            "loaded" + "".join(f"; {sentence}" for sentence in p.refused)
        print(f"plugin {p.name}: module {p.module} from package {p.package}, {state}")
    return 0
