#!/usr/bin/env bash
# The Python bindings as a user installs them: nfuse installed into a temporary prefix, the
# module pip-installed (Debian's setuptools and pybind11, no index) into a venv that sees Debian's
# site packages, then pytest against the zoo.
#   run_python_tests.sh BUILD_DIR MODELS_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
models=$(cd "$2" && pwd)
src=$(cd "$3" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
cp -r "$src/python" "$work/python"  # pip builds in the folder it is given: keep the source tree clean
NFUSE_PREFIX=$work/prefix "$work/venv/bin/pip" install --quiet --no-build-isolation --no-index "$work/python"
cd "$work"
NFUSE_MODELS=$models "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$src/tests/python"
