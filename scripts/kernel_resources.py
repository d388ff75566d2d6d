#!/usr/bin/env python3
"""The compiler's own evidence on every kernel the build holds, read from the built libraries.

For each kernel in each architecture's code (sm_80, sm_90, sm_90a) it reads, with cuobjdump
(scripts/setup.sh installs it), what ptxas gave it: registers, stack frame (spills and local
arrays live there), local memory, static shared memory, the bytes its SASS stores to local memory
(spill_bytes: ptxas's "spill stores"); and the block size it declares with
__launch_bounds__ (EIATTR_MAX_THREADS in the ELF's .nv.info section). From those it computes the
theoretical occupancy that registers and block size allow, by the CUDA occupancy rules of both
architectures (65,536 registers an SM allocated 256 at a time per warp, at most 64 warps and 32
blocks an SM). Dynamic shared memory is chosen by the launcher at run time and is not in the
binary: `halftape profile` sees it, this does not, so the figure here is an upper bound.

It prints one line a kernel and, with --json FILE, writes them as JSON (the build writes
build/kernel_resources.json, which `halftape profile` reads). With --floors FILE (CI:
tests/resource_floors.txt) it fails when
  - a kernel declares no __launch_bounds__ (its block size, and so its occupancy, would be
    whatever the launcher passes, unchecked by ptxas);
  - a fp16/bf16 kernel or a tensor-core GEMM has a stack frame or local memory (a spill, or an
    array ptxas could not keep in registers, in a hot loop);
  - a kernel's occupancy falls below the floor the file writes for its name, or its name has no
    floor there.
Names are given as the emulator gives them (kernels/gpu.h), enumerators spelled out.

  kernel_resources.py CUOBJDUMP LIBRARY... [--floors FILE] [--json FILE]
"""
import json
import math
import os
import re
import subprocess
import sys

REGISTERS_PER_SM = 65536
REGISTER_UNIT = 256  # registers are allocated per warp in units of 256
MAX_WARPS_PER_SM = 64
MAX_BLOCKS_PER_SM = 32


def run(cuobjdump, args):
    env = dict(os.environ, PATH=os.path.dirname(cuobjdump) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run([cuobjdump, *args], check=True, capture_output=True, text=True, env=env).stdout


def resource_usage(cuobjdump, library):
    """{(arch, mangled name): {registers, stack, shared, local}} from --dump-resource-usage."""
    out, arch, pending = {}, "sm_?", None  # a lone cubin has no "arch =" line
    for line in run(cuobjdump, ["--dump-resource-usage", library]).splitlines():
        line = line.strip()
        if line.startswith("arch = "):
            arch = line.split("=", 1)[1].strip()
        elif line.startswith("Function "):
            pending = line[len("Function "):].rstrip(":")
        elif pending and line.startswith("REG:"):
            fields = dict(f.split(":", 1) for f in line.split() if ":" in f)
            out[(arch, pending)] = {"registers": int(fields["REG"]), "stack": int(fields["STACK"]),
                                    "static_shared": int(fields["SHARED"]), "local": int(fields["LOCAL"])}
            pending = None
    return out


STORE_WIDTH = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}


def local_stores(cuobjdump, library):
    """{(arch, mangled name): bytes} that the kernel's STL instructions store to local memory, read
    from its SASS: ptxas's "spill stores" (a local array's stores count too; the kernels' floors
    keep hot kernels free of both)."""
    out, arch, function = {}, "sm_?", None
    for line in run(cuobjdump, ["-sass", library]).splitlines():
        s = line.strip()
        if s.startswith("arch = "):
            arch = s.split("=", 1)[1].strip()
        elif s.startswith("Function : "):
            function = s[len("Function : "):].strip()
            out.setdefault((arch, function), 0)
        elif function:
            m = re.search(r"\bSTL((?:\.[A-Z0-9]+)*)\s", s)
            if m:
                widths = [STORE_WIDTH[w] for w in m.group(1).split(".") if w in STORE_WIDTH]
                out[(arch, function)] += widths[0] if widths else 4
    return out


def launch_bounds(cuobjdump, library):
    """{(arch, mangled name): threads a block} from EIATTR_MAX_THREADS in each kernel's .nv.info."""
    out, arch, function, in_max_threads = {}, "sm_?", None, False
    for line in run(cuobjdump, ["-elf", library]).splitlines():
        s = line.strip()
        if s.startswith("arch = "):
            arch = s.split("=", 1)[1].strip()
        elif s.startswith(".nv.info."):
            function = s[len(".nv.info."):]
        elif s.startswith("Attribute:"):
            in_max_threads = s.endswith("EIATTR_MAX_THREADS")
        elif in_max_threads and s.startswith("Value:") and function:
            dims = [int(v, 16) for v in s.split()[1:4]]
            out[(arch, function)] = dims[0] * dims[1] * dims[2]
            in_max_threads = False
    return out


def demangle(names):
    text = subprocess.run(["c++filt"], input="\n".join(names), check=True, capture_output=True, text=True).stdout
    return dict(zip(names, text.splitlines()))


def enumerators():
    """{'(ht::GemmOp)0': 'ht::GemmOp::nt', '(ht::Fp8Kind)1': 'ht::Fp8Kind::e5m2', ...}: c++filt writes
    an enumerator template argument as a cast; the host compiler (and so the emulator) by its name.
    Read from the headers that declare them."""
    kernels = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels")
    spelled = {}
    for enum, header in (("GemmOp", "gemm.h"), ("Fp8Kind", "fp8_scaling.h")):
        with open(os.path.join(kernels, header), encoding="utf-8") as f:
            m = re.search(r"enum class " + enum + r"\s*:\s*[\w:]+\s*{([^}]*)}", f.read())
        if not m:
            sys.exit(f"FAIL: no 'enum class {enum}' in kernels/{header}")
        names = [n.split("=")[0].strip() for n in m.group(1).split(",") if n.strip()]
        spelled.update({f"(ht::{enum}){i}": f"ht::{enum}::{n}" for i, n in enumerate(names)})
    # a type of the kernel's own namespace as a template argument: the host compiler leaves it unqualified
    spelled["ht::gpu::cuda_impl::wgmma_gemm::"] = ""
    return spelled


def short_name(demangled):
    """`ht::gpu::cuda_impl::(anonymous namespace)::attention_dkv_kernel<__half, 128>(...)` ->
    `attention_dkv_kernel<__half, 128>`."""
    name = demangled.replace("(anonymous namespace)::", "").removeprefix("void ")
    depth, cut = 0, 0
    for i, c in enumerate(name):  # the last `::` before the parameters, outside template arguments
        depth += (c == "<") - (c == ">")
        if depth == 0 and c == "(":
            return name[cut:i]
        if depth == 0 and name.startswith("::", i):
            cut = i + 2
    return name[cut:]


def occupancy(registers, threads):
    """Theoretical occupancy (share of the SM's 64 warps) allowed by registers and block size."""
    warps = math.ceil(threads / 32)
    per_warp = math.ceil(max(registers, 1) * 32 / REGISTER_UNIT) * REGISTER_UNIT
    blocks = min(REGISTERS_PER_SM // per_warp // warps, MAX_WARPS_PER_SM // warps, MAX_BLOCKS_PER_SM)
    return blocks, blocks * warps / MAX_WARPS_PER_SM


def elementwise_kernels(floors_path):
    """The kernels of the element-wise ops: NAME_kernel for each X(NAME, Args) of
    HT_ELEMENTWISE_OPS in kernels/elementwise.h (beside the floors file's tests/)."""
    header = os.path.join(os.path.dirname(os.path.abspath(floors_path)), "..", "kernels", "elementwise.h")
    with open(header, encoding="utf-8") as f:
        text = f.read()
    block = re.search(r"#define HT_ELEMENTWISE_OPS\(X\)((?:.*\\\n)*.*)", text)
    if not block:
        sys.exit(f"{header}: no HT_ELEMENTWISE_OPS list")
    return [f"{name}_kernel" for name in re.findall(r"X\((\w+),", block.group(1))]


def read_floors(path):
    """{kernel base name: minimum occupancy in percent}; '#' starts a comment (the reason). The
    line '@elementwise N%' is the floor of every element-wise op's kernel."""
    floors = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if len(fields) != 2 or not fields[1].endswith("%"):
                sys.exit(f"{path}:{n}: expected 'KERNEL_NAME MIN_OCCUPANCY%  # reason', got: {line.strip()}")
            names = elementwise_kernels(path) if fields[0] == "@elementwise" else [fields[0]]
            for name in names:
                floors[name] = float(fields[1][:-1])
    return floors


def option(argv, flag):
    """Removes `flag VALUE` from argv; returns VALUE (None without the flag)."""
    if flag not in argv:
        return None
    i = argv.index(flag)
    if i + 1 >= len(argv):
        sys.exit(f"{flag} needs a file")
    value = argv[i + 1]
    del argv[i:i + 2]
    return value


def main(argv):
    json_path, floors_path = option(argv, "--json"), option(argv, "--floors")
    if len(argv) < 2:
        sys.exit("usage: " + __doc__.strip().splitlines()[-1].strip())
    cuobjdump, libraries = argv[0], argv[1:]
    if not os.access(cuobjdump, os.X_OK):
        sys.exit(f"FAIL: no cuobjdump at '{cuobjdump}': scripts/setup.sh installs it")
    floors = read_floors(floors_path) if floors_path else None
    spelled = enumerators()

    usage, threads, spills = {}, {}, {}
    for lib in libraries:
        usage.update(resource_usage(cuobjdump, lib))
        threads.update(launch_bounds(cuobjdump, lib))
        spills.update(local_stores(cuobjdump, lib))
    names = demangle(sorted({name for _, name in usage}))

    rows, failures, used_floors = [], [], set()
    for (arch, mangled), u in sorted(usage.items(), key=lambda kv: (kv[0][0], short_name(names[kv[0][1]]))):
        name = short_name(names[mangled])
        for cast, enumerator in spelled.items():
            name = name.replace(cast, enumerator)
        base = name.split("<", 1)[0]
        row = {"arch": arch, "kernel": name, **u, "spill_bytes": spills.get((arch, mangled), 0),
               "threads": threads.get((arch, mangled))}
        hot = "__half" in name or "__nv_bfloat16" in name or base.startswith("gemm_")
        if row["threads"] is None:
            failures.append(f"{arch} {name}: declares no __launch_bounds__")
        else:
            row["blocks_per_sm"], row["occupancy"] = occupancy(u["registers"], row["threads"])
            floor = floors.get(base) if floors is not None else 0
            if floor is None:
                failures.append(f"{arch} {name}: no occupancy floor in {floors_path} for '{base}'")
            else:
                used_floors.add(base)
                if 100 * row["occupancy"] + 1e-9 < floor:
                    failures.append(f"{arch} {name}: occupancy {100 * row['occupancy']:.1f}% is below its floor {floor:g}%")
        if floors is not None and hot and (u["stack"] or u["local"]):
            failures.append(f"{arch} {name}: a fp16/bf16 or tensor-core kernel with a {u['stack']}-byte stack frame and "
                            f"{u['local']} bytes of local memory (spills)")
        rows.append(row)
        occ = f"{100 * row['occupancy']:5.1f}% ({row['blocks_per_sm']:2} blocks)" if "occupancy" in row else "    ?"
        print(f"{arch:7} {name:58.58} regs {u['registers']:3} stack {u['stack']:5} local {u['local']:4} spill {row['spill_bytes']:4} "
              f"smem {u['static_shared']:6} threads {row['threads'] or 0:4} occupancy {occ}{'  hot' if hot else ''}")
    for base in sorted(set(floors or {}) - used_floors):
        failures.append(f"{floors_path}: '{base}' names no kernel of this build (remove its floor)")
    if not rows:
        failures.append("no kernel found in " + " ".join(libraries))
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump({"source": "cuobjdump --dump-resource-usage, -elf and -sass of " + " ".join(map(os.path.basename, libraries)),
                       "kernels": rows}, f, indent=1)
    print(f"{len(rows)} kernels over {len({r['arch'] for r in rows})} architectures; "
          f"{sum(1 for r in rows if r['stack'] or r['local'])} with a stack frame or local memory")
    for f in failures:
        print("FAIL:" if floors is not None else "note:", f)
    return 1 if failures and floors is not None else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
