#!/usr/bin/env python3
"""Fails when a build needs a C library that must be installed on the system.

Usage (from the repository root; needs cargo and Python 3):

    python3 scripts/check_system_libs.py --all-features [--binary PATH]
    python3 scripts/check_system_libs.py --features cloud,ffi [--binary PATH]

1. Resolves the dependency graph of the core crate with those features for
   Linux x86-64 (`cargo metadata`; normal and build dependencies, not
   dev-dependencies) and lists every crate that declares `links` (a native
   library). Each must be in KNOWN below, a crate that needs nothing from the
   system: it builds the library from source it bundles, or links nothing.
   A crate not in the list (say `hdf5-metno-sys`, which needs libhdf5-dev) is
   an error: the README's build would fail on a machine without that package.
2. With --binary, reads the dynamic section of a built binary (`readelf -d`)
   and fails on any shared library beyond the C runtime's.
"""
import argparse
import json
import subprocess
import sys

# Crates with `links` that need no system package, and why.
KNOWN = {
    "ring": "builds its C and assembly from the sources it bundles",
    "zstd-sys": "builds zstd from the sources it bundles (its pkg-config feature is off)",
    "liblzma-sys": "builds xz from the sources it bundles when no system liblzma is found",
    "bzip2-sys": "builds bzip2 from the sources it bundles",
    "libz-sys": "builds zlib from the sources it bundles when no system zlib is found",
    "rayon-core": "links no library (`links` only makes it unique in a build)",
    "prettyplease": "links no library (`links` only makes it unique in a build)",
}

# Shared libraries every Rust binary on glibc may need.
C_RUNTIME = {
    "libc.so.6",
    "libm.so.6",
    "libgcc_s.so.1",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libutil.so.1",
    "ld-linux-x86-64.so.2",
}


def native_crates(feature_args):
    """(name, version, links) of every crate with `links` in the build."""
    meta = json.loads(
        subprocess.run(
            [
                "cargo", "metadata", "--format-version", "1", "--locked",
                *feature_args,
                "--filter-platform", "x86_64-unknown-linux-gnu",
            ],
            check=True, capture_output=True, text=True,
        ).stdout
    )
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    root = meta["resolve"]["root"] or next(
        p["id"] for p in meta["packages"] if p["name"] == "datafusion-kendall"
    )
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for dep in nodes[node]["deps"]:
            if any(kind["kind"] != "dev" for kind in dep["dep_kinds"]):
                stack.append(dep["pkg"])
    return sorted(
        (packages[i]["name"], packages[i]["version"], packages[i]["links"])
        for i in seen
        if packages[i].get("links")
    )


def needed_libraries(binary):
    """The NEEDED entries of an ELF binary's dynamic section."""
    out = subprocess.run(
        ["readelf", "-d", binary], check=True, capture_output=True, text=True
    ).stdout
    return [
        line.split("[", 1)[1].split("]", 1)[0]
        for line in out.splitlines()
        if "(NEEDED)" in line
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--features", help="the build's features, comma-separated")
    which.add_argument("--all-features", action="store_true")
    ap.add_argument("--binary")
    args = ap.parse_args()
    feature_args = ["--all-features"] if args.all_features else ["--features", args.features]
    build = " ".join(feature_args)
    failures = []
    for name, version, links in native_crates(feature_args):
        if name in KNOWN:
            print(f"ok: {name} {version} (links {links}): {KNOWN[name]}")
        else:
            failures.append(
                f"{name} {version} links the native library '{links}' and is not "
                f"known to build it from bundled source (cargo {build})"
            )
    if args.binary:
        for lib in needed_libraries(args.binary):
            if lib in C_RUNTIME:
                print(f"ok: {args.binary} needs {lib}")
            else:
                failures.append(f"{args.binary} needs the shared library {lib}")
    for failure in failures:
        print(f"error: {failure}", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
