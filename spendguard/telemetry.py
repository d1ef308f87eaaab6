"""OpenTelemetry spans and metrics for every guarded call: ``enable()``, ``disable()``,
``enabled()``. The implementation and what each span carries: ``spendguard._adoption.telemetry``
and docs/telemetry.md."""

from spendguard._adoption.telemetry import disable, enable, enabled

__all__ = ["disable", "enable", "enabled"]
