"""The choke point: the httpx2 transport every guarded SDK client sends through, the
``Guard`` that prices, reserves and settles each attempt, stream metering and the rules for
charging what could not be read. The only layer that sees requests and responses as bytes.
"""
