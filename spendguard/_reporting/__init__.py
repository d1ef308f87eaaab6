"""Reading the ledger for people and finance: exports (CSV, JSONL, FOCUS), reports (text,
HTML), reconciliation against provider reports, self-hosted traffic priced at API rates.
"""
