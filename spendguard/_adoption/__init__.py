"""Guarding code we don't own: ``install()`` / ``uninstall()``, ``spendguard run`` and its
start-up hook, and the OpenTelemetry subscriber.
"""
