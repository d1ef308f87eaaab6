"""The foundation layer: the error tree, Decimal USD, calendar periods and rolling windows,
text made safe for terminals. Imports nothing of spendguard.
"""
