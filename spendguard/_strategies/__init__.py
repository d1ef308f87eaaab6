"""When and how to spend: plan before fan-out, deferred batches at the batch discount, the
cascade, the agent loop guard. Each spends through a guarded client and the guard's two
documented entry points (``client_guard``, ``prereserved``).
"""
