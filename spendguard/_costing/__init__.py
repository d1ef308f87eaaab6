"""What a call is and what it can cost: the endpoint vocabulary, price tables, token counts,
usage read from replies, costs, the call read from a request body and its worst case, the
route from a path or host to a price id. Imports only ``_core`` and ``_sizing``.
"""
