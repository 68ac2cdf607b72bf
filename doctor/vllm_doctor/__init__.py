"""vllm-doctor: incident triage for vLLM services, shipped with 《vLLM 学习手册》.

Seven phases, each a subcommand and together the ``run`` pipeline:
probe → collect → triage → diagnose → plan → verify → report.

The tool only *reads*: PromQL over the Prometheus HTTP API, or a JSON fixture.
Remediation is a printed plan; every mutating step needs a human's approval.
"""

__version__ = "0.1.0"
VLLM_PIN = "0.26.0"  # the vLLM release whose metric names this build checks against
