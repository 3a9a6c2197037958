#!/usr/bin/env bash
# The Python package's tests (python/tests/, pytest): makes a virtual environment under
# build/python-venv from Debian's /usr/bin/python3 with the system's packages visible (pandas, numpy,
# matplotlib and pytest from scripts/install_deps.sh), installs scikit-build-core into it from PyPI,
# pip-installs ./python (its native module links the library's archives of build/, or builds the
# library itself with -fPIC in build/python/ when build/ holds none), and
# runs pytest against build/bin's executables (build the tools first). .ci/run runs it after ctest.
#   scripts/python_tests.sh [PYTEST ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/python-venv
python=/usr/bin/python3
if [[ ! -x $venv/bin/python ]]; then
  "$python" -m venv --system-site-packages "$venv"
fi
"$venv/bin/python" -c "import scikit_build_core" 2>/dev/null ||
  "$venv/bin/pip" install --quiet "scikit-build-core>=0.8"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
if command -v ccache >/dev/null && [[ -z ${CMAKE_CXX_COMPILER_LAUNCHER:-} ]]; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi
# The library's archives of build/ (position-independent) are linked, not compiled again, when
# build/ holds them (build the tools first).
link_build=()
if [[ -f build/wattcal-library.cmake && -f build/pipeline/libwattcal_usecases.a ]]; then
  link_build=(--config-settings="cmake.define.WATTCAL_LIBRARY_EXPORT=$PWD/build/wattcal-library.cmake")
fi
# --no-build-isolation: the venv's scikit-build-core and Debian's pybind11 (pybind11-dev) build it.
"$venv/bin/pip" install --quiet --no-build-isolation "${link_build[@]}" ./python
# Run from the tests' folder so that `import wattcal` is the installed package, not python/wattcal.
cd python/tests
exec "../../$venv/bin/python" -m pytest -q -p no:cacheprovider "$@" .
