"""Every reach into another library's private code, one module per library.

spendguard attaches to code it does not own: the Stainless-generated SDKs (``openai``,
``anthropic``: :mod:`.stainless`), ``google-genai`` (:mod:`.genai`), the HTTP clients
(``httpx2`` and classic ``httpx``: :mod:`.httpx_private`) and the import system
(:mod:`.imports`). Each reach is a named function or constant here, with what it relies on,
and ``tests/guard/test_private_reaches.py`` checks each one against the installed version: an
upgrade of one of those libraries is checked in one place.
"""
