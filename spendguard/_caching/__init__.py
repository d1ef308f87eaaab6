"""Cache ordering, in parts: the entry points (``order_for_cache``, ``cache_stats``) are in
``order``.

- ``layout``: a prompt's cacheable slots in render order, and prefixes cut at a slot;
- ``volatile``: values (timestamps, uuids, ids) that break a cached prefix;
- ``arrange``: stable content first, without changing what the request says;
- ``policy``: TTL and pay-back arithmetic over prices;
- ``marks``: Anthropic breakpoints, OpenAI keys and breakpoints;
- ``inline``: shared documents inside one string (split out, or noted);
- ``kind``: which provider and endpoint a bare body is for;
- ``stats``: hit rate and savings measured from returned usage and the ledger.
"""
