#!/usr/bin/env bash
# Wheels of the dependencies PyPI publishes as source archives only (pyspark, pyspark-client),
# built once into data/wheelhouse, where every later install finds them (UV_FIND_LINKS).
#
# Without it each install downloads pyspark's 450 MB source archive and builds a 450 MB wheel
# from it again (about 35 s of CPU): the package host's responses carry no caching headers
# here, so uv's cache never reuses a build. make test's installs (the other Pythons'
# virtualenvs, the wheel-install test) built it six times.
#
#     bash scripts/wheelhouse.sh pyspark==4.3.0 ...      # these versions
#     bash scripts/wheelhouse.sh --resolve 3.10 ...      # the versions pyproject's ranges
#                                                        # resolve to on these Pythons
#
# Prints nothing but errors; the folder is data/wheelhouse (export UV_FIND_LINKS to use it).
set -euo pipefail
cd "$(dirname "$0")/.."

HOUSE=data/wheelhouse
SOURCE_ONLY='^(pyspark|pyspark-client)=='
mkdir -p "$HOUSE"
export UV_FIND_LINKS="$PWD/$HOUSE"

specs=()
if [ "${1:-}" = --resolve ]; then
    shift
    for version in "$@"; do
        while IFS= read -r spec; do
            specs+=("$spec")
        done < <(.venv/bin/uv pip compile --quiet --no-header --no-annotate \
            --python-version "$version" pyproject.toml --extra test | grep -E "$SOURCE_ONLY" || true)
    done
else
    specs=("$@")
fi

# One build at a time (make test's lanes may ask at once); each wheel is built beside the
# folder and renamed into it, so an install never finds half a wheel.
exec 9>"$HOUSE/.lock"
flock 9
for spec in "${specs[@]}"; do
    name=${spec%%==*}
    version=${spec#*==}
    if compgen -G "$HOUSE/${name//-/_}-$version-*.whl" >/dev/null; then
        continue
    fi
    building=$(mktemp -d "$HOUSE/.building.XXXXXX")
    .venv/bin/python -m pip wheel --quiet --disable-pip-version-check --no-deps \
        --wheel-dir "$building" "$spec"
    mv "$building"/*.whl "$HOUSE"/
    rm -rf "$building"
done
