#!/usr/bin/python3
"""The component layering is enforced by the compiler: a source of component X, compiled with
its real command line (compile_commands.json), can include the headers of the components X
links and cannot include any other. Each case preprocesses a probe that includes one header.
    layering_test.py BUILD_DIR
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

# (a source of the component, a header it may include, headers it must not reach)
CASES = [
    ("src/kernels/cpu_features.cpp", "kernels/cpu_features.h", ["nfuse/status.h", "ir/graph.h"]),
    ("src/ir/graph.cpp", "nfuse/status.h", ["ops/op_helpers.h", "backends/backend.h"]),
    ("src/ops/conv.cpp", "ir/op_registry.h", ["passes/pass_manager.h", "backends/ref/ref_kernel.h"]),
    ("src/frontend/onnx/onnx_importer.cpp", "ir/infer_shapes.h", ["passes/pass_manager.h", "ops/op_helpers.h"]),
    ("src/passes/fold_constants.cpp", "ops/op_helpers.h", ["backends/ref/ref_kernel.h", "frontend/onnx/onnx_importer.h"]),
    ("src/backends/backend_registry.cpp", "kernels/cpu_features.h", ["backends/ref/ref_kernel.h", "ops/op_helpers.h"]),
    ("src/backends/ref/ref_backend.cpp", "ops/op_helpers.h", ["backends/cpu/cpu_op.h", "partition/partitioner.h"]),
    ("src/backends/cpu/cpu_backend.cpp", "backends/ref/ref_kernel.h",
     ["backends/fusion/fused_group.h", "compile/plan.h", "passes/pass_manager.h"]),
    ("src/backends/fusion/fusion_backend.cpp", "backends/cpu/cpu_op.h", ["partition/partitioner.h", "runtime/session.h"]),
    ("src/partition/partitioner.cpp", "backends/backend.h",
     ["backends/cpu/cpu_op.h", "backends/ref/ref_kernel.h", "compile/plan.h"]),
    ("src/compile/plan.cpp", "backends/ref/ref_kernel.h",
     ["backends/cpu/cpu_op.h", "backends/fusion/fused_group.h", "runtime/session.h", "passes/pass_manager.h"]),
    ("src/runtime/session.cpp", "passes/pass_manager.h", ["quant/quantize_model.h", "frontend/onnx/onnx_importer.h"]),
    ("src/quant/quantize_model.cpp", "runtime/session.h", ["api/api_objects.h"]),
    ("src/api/api_session.cpp", "quant/quantize_model.h", []),
]


def main():
    build = sys.argv[1]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = {os.path.realpath(e["file"]): e for e in json.load(f)}
    failures, checks = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for source, allowed, forbidden in CASES:
            entry = commands.get(os.path.realpath(os.path.join(root, source)))
            if entry is None:
                failures.append(f"{source}: not in compile_commands.json")
                continue
            args = shlex.split(entry["command"]) if "command" in entry else entry["arguments"]
            # The same compiler and flags, minus the output, dependency file and source.
            kept, skip = [], False
            for a in args:
                if skip:
                    skip = False
                    continue
                if a in ("-o", "-MF", "-MT", "-MQ", "-c"):
                    skip = a != "-c"
                    continue
                if a in ("-MD", "-MMD") or os.path.realpath(a) == os.path.realpath(entry["file"]):
                    continue
                kept.append(a)
            if kept and os.path.basename(kept[0]) == "ccache":
                kept = kept[1:]
            for header, expect_ok in [(allowed, True)] + [(h, False) for h in forbidden]:
                probe = os.path.join(tmp, "probe.cpp")
                with open(probe, "w") as f:
                    f.write(f'#include "{header}"\n')
                r = subprocess.run(kept + ["-E", "-o", os.devnull, probe], cwd=entry["directory"],
                                   capture_output=True, text=True)
                checks += 1
                if (r.returncode == 0) != expect_ok:
                    what = "cannot include" if expect_ok else "can include"
                    failures.append(f"{source} {what} {header}: {r.stderr.strip()[:300]}")
    for f in failures:
        print("FAIL", f)
    print(f"layering: {checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
