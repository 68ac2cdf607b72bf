"""pytest wiring of the monitoring cookbook's tests: the doctor's synthetic exporter and Prometheus stack."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doctor"))
