"""The drop-in classes: subclasses of the official openai and anthropic clients (Azure,
Bedrock and Vertex included) that carry a budget. Part of the public surface, re-exported
by ``spendguard``.
"""
