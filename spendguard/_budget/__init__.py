"""Budgets and the ledger: scopes, reservations (all or none), thresholds, per-user
templates, runaway rules, degrade, learned input bounds, call events, observe mode, and the
ledgers themselves (memory, SQLite, Redis). Knows nothing of HTTP.
"""
