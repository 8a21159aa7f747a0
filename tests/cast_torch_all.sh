#!/bin/sh
# tests/cast_torch_all.py under a Python with torch, else skipped (77):
#   cast_torch_all.sh PYTHON LIBBS_CAST_PROBE.so
py=${1:-}
if [ -z "$py" ] || [ ! -x "$py" ] || ! "$py" -c 'import torch' 2>/dev/null; then
  echo "SKIP: no Python with torch (ci/setup.sh makes build/torch-venv)"
  exit 77
fi
exec "$py" "$(dirname "$0")/cast_torch_all.py" "$2"
