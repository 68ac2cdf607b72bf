#!/usr/bin/env bash
# GPU validation on an NVIDIA machine with vLLM installed (.github/workflows/gpu-validation.yml).
# Runs every `vllm …` line of scripts/gpu-validation.commands and writes redacted evidence:
#   scripts/gpu-validation.sh [--out DIR] [--id ID] [--commands FILE] [--timeout SECONDS]
# See scripts/gpu_validation.py for the layout, the redaction rule and the exit status;
# evidence records are described in evidence/README.md and validated by `make validate`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The runner's Python (the one vLLM is installed into is fine); only the standard library is used.
py="${GPU_VALIDATION_PYTHON:-$(command -v python3 || true)}"
if [[ -z "$py" ]]; then
  echo "error: python3 not found (set GPU_VALIDATION_PYTHON)" >&2
  exit 2
fi
exec "$py" "$here/gpu_validation.py" "$@"
