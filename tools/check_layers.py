#!/usr/bin/env python3
"""Fails on an #include that runs up Hive's layers.

    tools/ -> actors/ -> runtime/engine -> runtime/model -> runtime/loader, runtime/core
                         runtime/text (beside them)
              -> moe/ -> parallel/ -> kernels/ -> base/ (the floor every folder may use)

Each folder may include only itself and the folders listed for it below;
CAF only where actors live (actors/, tools/, tests/), yaml-cpp only in the
launch file's room (actors/). Prints every offending line as
`path:line: ...` and exits 1 when there is one.

    tools/check_layers.py [--root DIR]   check the tree at DIR (default: the repository)
    tools/check_layers.py --self-test    show that each rule catches what it should
"""
import argparse
import pathlib
import re
import sys
import tempfile

# Folder -> the project folders its files may include (itself included).
# base/ is the floor every folder may use (the one error type, the one JSON
# reader) and includes nothing of the project itself.
ALLOWED = {
    "base": ["base"],
    "kernels": ["kernels", "base"],
    "parallel": ["parallel", "kernels", "base"],
    "moe": ["moe", "parallel", "kernels", "base"],
    "runtime/core": ["runtime/core", "base"],
    "runtime/text": ["runtime/text", "base"],
    # Checkpoints in; of the plan's room only a request's sampling parameters
    # (a checkpoint's generation_config.json defaults).
    "runtime/loader": ["runtime/loader", "runtime/core/sampling_params.hpp", "kernels", "base"],
    "runtime/model": ["runtime/model", "runtime/loader", "runtime/core", "moe", "parallel",
                      "kernels", "base"],
    "runtime/engine": ["runtime/engine", "runtime/model", "runtime/loader", "runtime/core",
                       "runtime/text", "moe", "parallel", "kernels", "base"],
    "actors": ["actors", "runtime", "moe", "parallel", "kernels", "base"],
    "tools": ["tools", "actors", "runtime", "moe", "parallel", "kernels", "base"],
}
# System headers that belong to one layer: prefix -> folders that may include it.
EXTERNAL = {
    "caf/": ["actors", "tools", "tests"],
    "yaml-cpp/": ["actors"],
}
PROJECT_ROOTS = ("base/", "kernels/", "parallel/", "moe/", "runtime/", "actors/", "tools/",
                 "tests/")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCES = (".hpp", ".cpp", ".h", ".cu", ".cuh")


def folder_of(relative):
    """The most specific folder of ALLOWED that holds `relative`, or None."""
    best = None
    for folder in ALLOWED:
        if relative == folder or relative.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def under(path, prefixes):
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes)


def check_file(root, path):
    relative = path.relative_to(root).as_posix()
    folder = folder_of(relative)
    top = relative.split("/", 1)[0]
    errors = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        match = INCLUDE.match(line)
        if not match:
            continue
        included = match.group(2)
        for prefix, allowed in EXTERNAL.items():
            if included.startswith(prefix) and top not in allowed:
                errors.append(f"{relative}:{number}: {relative.split('/')[0]}/ includes "
                              f"<{included}>, which only {', '.join(a + '/' for a in allowed)} may")
        if match.group(1) != '"' or folder is None or not included.startswith(PROJECT_ROOTS):
            continue
        if not under(included, ALLOWED[folder]):
            errors.append(f"{relative}:{number}: {folder}/ includes \"{included}\", "
                          f"up the layers (it may include {', '.join(ALLOWED[folder])})")
    return errors


def check_tree(root):
    errors = []
    for top in ("base", "kernels", "parallel", "moe", "runtime", "actors", "tools", "tests"):
        for path in sorted((root / top).rglob("*")):
            if path.suffix in SOURCES and path.is_file():
                errors += check_file(root, path)
    return errors


def self_test():
    """Each rule, broken once in a scratch tree, must be reported exactly there."""
    cases = {
        "base/a.hpp": '#include "kernels/tensor.hpp"',
        "kernels/a.cpp": '#include "parallel/communicator.hpp"',
        "parallel/a.cpp": '#include "moe/router.hpp"',
        "moe/a.cpp": '#include "runtime/core/scheduler.hpp"',
        "runtime/core/a.cpp": '#include "runtime/model/model.hpp"',
        "runtime/core/b.cpp": '#include "kernels/tensor.hpp"',
        "runtime/text/a.cpp": '#include "runtime/core/request.hpp"',
        "runtime/core/c.cpp": '#include "runtime/loader/model_config.hpp"',
        "runtime/loader/a.cpp": '#include "runtime/model/model.hpp"',
        "runtime/loader/b.cpp": '#include "runtime/core/scheduler.hpp"',
        "runtime/loader/c.cpp": '#include "moe/router.hpp"',
        "runtime/model/a.cpp": '#include "runtime/engine/llm_engine.hpp"',
        "runtime/model/b.cpp": '#include "runtime/text/utf8.hpp"',
        "runtime/engine/a.cpp": '#include "actors/engine.hpp"',
        "actors/a.cpp": '#include "tools/cli/args.hpp"',
        "runtime/engine/c.cpp": "#include <caf/actor.hpp>",
        "moe/b.cpp": "#include <yaml-cpp/yaml.h>",
    }
    fine = {
        "runtime/core/ok.cpp": '#include "base/error.hpp"\n#include "runtime/core/sequence.hpp"',
        "moe/ok.cpp": '#include "parallel/rank_group.hpp"\n#include "moe/router.hpp"',
        "kernels/ok.cpp": '#include "base/json_reader.hpp"\n#include "kernels/tensor.hpp"',
        "runtime/loader/ok.cpp": '#include "runtime/core/sampling_params.hpp"\n'
                                 '#include "kernels/quant/ggml_type.hpp"',
        "runtime/model/ok.cpp": '#include "runtime/loader/weight_store.hpp"',
        "runtime/engine/ok.cpp": '#include "runtime/model/model.hpp"\n#include "runtime/text/utf8.hpp"',
        "actors/ok.cpp": '#include <caf/actor.hpp>\n#include <yaml-cpp/yaml.h>',
        "tests/ok.cpp": '#include "tools/cli/args.hpp"',
    }
    with tempfile.TemporaryDirectory() as scratch:
        root = pathlib.Path(scratch)
        for name, text in {**cases, **fine}.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text + "\n")
        errors = check_tree(root)
    reported = {e.split(":", 1)[0] for e in errors}
    missed = sorted(set(cases) - reported)
    wrong = sorted(reported - set(cases))
    for name in missed:
        print(f"self-test: {name} breaks a rule but was not reported", file=sys.stderr)
    for name in wrong:
        print(f"self-test: {name} keeps the rules but was reported", file=sys.stderr)
    if missed or wrong:
        return 1
    print(f"check_layers self-test: {len(cases)} violations caught, {len(fine)} clean files passed")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parent.parent)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    errors = check_tree(args.root)
    for error in errors:
        print(error, file=sys.stderr)
    if errors:
        print(f"check_layers: {len(errors)} include(s) run up the layers", file=sys.stderr)
        return 1
    print("check_layers: every include runs down the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
