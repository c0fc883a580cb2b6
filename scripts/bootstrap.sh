#!/usr/bin/env bash
# Creates .venv and installs the locked dependencies (requirements.lock) and Sluice itself.
# Idempotent: re-running it syncs the environment to the lock file.
set -euo pipefail
cd "$(dirname "$0")/.."

# The project's own runs use the Python of .python-version (the package supports 3.10-3.13).
PROJECT_PYTHON=$(cat .python-version)
PYTHON=${PYTHON:-python$PROJECT_PYTHON}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
"$PYTHON" - "$PROJECT_PYTHON" <<'PY'
import sys
wanted = tuple(int(part) for part in sys.argv[1].split("."))
if sys.version_info[:2] != wanted:
    sys.exit(f"Sluice's own runs need Python {sys.argv[1]}, found {sys.version.split()[0]} "
             f"({sys.executable})")
PY
command -v java >/dev/null 2>&1 || { echo "Spark needs Java 17 (java not found on PATH)" >&2; exit 1; }
# The landing compiles its JVM line reader (spark_jobs/jvm) with the JDK's javac; with a JRE only
# it reads segments in Python workers instead (slower), so a JDK is installed where possible.
if ! command -v javac >/dev/null 2>&1 && [[ -z "${JAVA_HOME:-}" || ! -x "$JAVA_HOME/bin/javac" ]]; then
    # shellcheck source=scripts/lib.sh
    if (. scripts/lib.sh && need_apt javac openjdk-17-jdk-headless && apt_install openjdk-17-jdk-headless); then
        :
    else
        echo "bootstrap: no javac: the landing will read segments in Python workers" >&2
    fi
fi

# Sluice's compiled parts (pipeline_core/source/_framing.c, the multiline presets' line tests;
# pipeline_core/staging_contract/_int_lists.c, the manifest's event columns) are built by the
# install below with a C compiler; without one the install goes on and NumPy and msgspec do
# the same, slower, so a compiler is installed where possible.
if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then
    # shellcheck source=scripts/lib.sh
    if (. scripts/lib.sh && need_apt cc gcc && apt_install gcc); then
        :
    else
        echo "bootstrap: no C compiler: multiline framing runs in NumPy" >&2
    fi
fi

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
UV_VERSION=$(sed -n 's/^uv==//p' requirements-dev.txt 2>/dev/null || true)
if ! .venv/bin/uv --version 2>/dev/null | grep -q "${UV_VERSION:-0.13.8}"; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check "uv==${UV_VERSION:-0.13.8}"
fi
# The lock leaves out pyspark-client (a dependency of the Spark provider): it installs into the
# same pyspark/ folder as the full pyspark wheel and would overwrite parts of it.
# Old revisions in uv's cache are dropped first: repeated set-ups otherwise keep every build.
.venv/bin/uv cache prune --quiet
# pyspark is a source archive only: its wheel is built once into data/wheelhouse and found there.
export UV_FIND_LINKS="$PWD/data/wheelhouse"
bash scripts/wheelhouse.sh "$(grep -E '^pyspark==' requirements.lock)"
.venv/bin/uv pip sync --quiet --python .venv/bin/python requirements.lock
.venv/bin/uv pip install --quiet --python .venv/bin/python --no-deps -e .
# The build leaves sluice.egg-info in the checkout: on the import path (the repository is), it
# would be a second "sluice" distribution and Airflow would load the plugin entry point twice.
rm -rf ./*.egg-info build
.venv/bin/python - <<'PY'
import re, pyspark
pinned = re.search(r"^pyspark==(\S+)", open("requirements.lock").read(), re.M).group(1)
if pyspark.__version__ != pinned:
    raise SystemExit(f"installed pyspark {pyspark.__version__} is not the pinned {pinned}")
PY
echo "environment ready: .venv ($(.venv/bin/python --version), pyspark $(.venv/bin/python -c 'import pyspark; print(pyspark.__version__)'))"
