"""Builds the `nfuse` extension against an installed nfuse (its headers and libnfuse.so).

    NFUSE_PREFIX=/path/to/prefix pip install --no-build-isolation --no-index ./python

The prefix is the one `cmake --install` wrote (default: pkg-config's idea of nfuse, else
/usr/local). Only Debian's build tools are used: setuptools and pybind11 (python3-pybind11).
"""
import os
import subprocess

from pybind11.setup_helpers import Pybind11Extension
from setuptools import setup


def nfuse_dirs():
    prefix = os.environ.get("NFUSE_PREFIX")
    if prefix:
        for libdir in ("lib", "lib64", os.path.join("lib", "x86_64-linux-gnu"), os.path.join("lib", "aarch64-linux-gnu")):
            if os.path.exists(os.path.join(prefix, libdir, "libnfuse.so")):
                return os.path.join(prefix, "include"), os.path.join(prefix, libdir)
        raise SystemExit(f"setup.py: no libnfuse.so under NFUSE_PREFIX={prefix}")
    try:
        inc = subprocess.check_output(["pkg-config", "--variable=includedir", "nfuse"], text=True).strip()
        lib = subprocess.check_output(["pkg-config", "--variable=libdir", "nfuse"], text=True).strip()
        return inc, lib
    except (OSError, subprocess.CalledProcessError):
        return "/usr/local/include", "/usr/local/lib"


include_dir, lib_dir = nfuse_dirs()
setup(
    name="nfuse",
    version="0.1.0",
    description="Python bindings of the nfuse inference runtime",
    ext_modules=[
        Pybind11Extension(
            "nfuse",
            ["nfuse_module.cpp"],
            include_dirs=[include_dir],
            library_dirs=[lib_dir],
            libraries=["nfuse"],
            runtime_library_dirs=[lib_dir],
            cxx_std=17,
        )
    ],
)
