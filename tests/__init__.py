"""spendguard's test suite (a package so helpers import as ``tests.<name>``)."""
