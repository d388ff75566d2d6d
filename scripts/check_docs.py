#!/usr/bin/env python3
"""Docs that name what the code no longer has fail CI: every `name` in backticks in README.md and
docs/*.md that looks like a flag (--name), a CMake target (ht_name) or a snake_case identifier
(a kernel, a function, a variable) must occur in the code: cli/ and scripts/ for flags, the CMake
files for targets, the sources, scripts and tests for identifiers. Names from other projects that
the docs cite (PyTorch's, nanoGPT's, llm.c's, NCCL's, ...) are listed below with where they come
from.

    scripts/check_docs.py [REPO]
"""
import os
import pathlib
import re
import sys

# Names the docs cite from elsewhere: never in this code, and rightly so.
EXTERNAL = {
    # PyTorch
    "clip_grad_norm_", "set_num_threads", "zero_grad", "state_dict", "set_to_none", "autocast", "no_grad", "torch.compile",
    "scaled_dot_product_attention", "load_state_dict", "max_split_size_mb", "cross_entropy", "unscale_", "growth_interval",
    "backoff_factor", "growth_factor", "init_scale", "found_inf", "find_unused_parameters", "gradient_as_bucket_view",
    "bucket_cap_mb", "init_process_group", "all_reduce", "reduce_scatter", "all_gather",
    # OpenMPI's mpirun
    "--allow-run-as-root", "--mca", "btl_tcp_if_include",
    # the safetensors package
    "load_file",
}

FLAG = re.compile(r"^--[a-z][a-z0-9-]*$")
TARGET = re.compile(r"^ht_[a-z0-9_]+$")
IDENT = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+_?$")


def read_all(paths):
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in paths)


def main(argv):
    repo = pathlib.Path(argv[1] if len(argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    docs = [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]
    code_files = []
    for top, dirs, files in os.walk(repo, followlinks=True):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build")) and d not in ("docs", "measured")]
        code_files += [pathlib.Path(top) / f for f in files
                       if pathlib.Path(f).suffix in {".h", ".cpp", ".cu", ".cuh", ".sh", ".py", ".txt", ".cmake", ".inc"}
                       and f not in ("check_docs.py", "check_docs.sh")]  # the check and its test name stale names
    code = read_all(code_files)
    flag_text = read_all([p for p in code_files if p.parts[len(repo.parts)] in ("cli", "scripts", "tests")])
    cmake = read_all([repo / "CMakeLists.txt", *(repo / "cmake").glob("*.cmake"), repo / "tests" / "CMakeLists.txt"])
    problems = []
    for doc in docs:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for span in re.findall(r"`([^`]+)`", line):
                for word in re.split(r"[\s=(),\[\]]+", span):
                    word = word.strip(".:;")
                    if not word or word in EXTERNAL:
                        continue
                    if FLAG.match(word):
                        if f'"{word}"' not in flag_text and f"{word} " not in flag_text and f"{word})" not in flag_text:
                            problems.append(f"{doc.relative_to(repo)}:{n}: flag {word} is in no command or script")
                    elif TARGET.match(word):  # a CMake target, or a C function named like one
                        if not re.search(rf"\b{re.escape(word)}\b", cmake) and not re.search(rf"\b{re.escape(word)}\b", code):
                            problems.append(f"{doc.relative_to(repo)}:{n}: CMake target {word} does not exist")
                    elif IDENT.match(word):
                        if not re.search(rf"\b{re.escape(word.rstrip('_'))}", code):
                            problems.append(f"{doc.relative_to(repo)}:{n}: {word} is named nowhere in the code")
    for p in problems:
        print(p)
    print(f"check_docs: {len(docs)} documents, {len(problems)} names the code does not have")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
