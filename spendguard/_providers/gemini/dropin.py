"""The drop-in guarded Gemini client: ``google.genai.Client`` with ``budget=`` added."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from google import genai

from spendguard._guard.options import ClientOptions
from spendguard._providers.gemini.guard import guard_genai_client

if TYPE_CHECKING:
    from spendguard._budget.budget import Budget
    from spendguard._caching.order import CacheOrder
    from spendguard._costing.prices import PriceTable

__all__ = ["Gemini"]


class Gemini(genai.Client):
    """``google.genai.Client`` whose every request is budgeted before it is sent.

    Takes the official constructor's arguments (``api_key``, ``vertexai``, ``project``,
    ``location``, ``credentials``, ``http_options``, ...) plus spendguard's: ``budget``,
    ``cap_output``, ``allow_unpriced``, ``store_prompts``, ``prices``. ``client.aio``,
    ``client.chats`` and every other module share the guard. ``cache_order`` (True or a
    ``CacheOrder``) orders requests for Gemini's implicit prefix cache. ``cap_output`` lowers
    ``generationConfig.maxOutputTokens`` (and sets a ``thinkingBudget``) to fit the budget.
    """

    def __init__(self, *args: Any, budget: Budget | None = None, cap_output: bool = False,
                 allow_unpriced: bool = False, store_prompts: bool = False,
                 prices: PriceTable | None = None, cache_order: bool | CacheOrder = False,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        options = ClientOptions(budget=budget, cap_output=cap_output,
                                allow_unpriced=allow_unpriced, store_prompts=store_prompts,
                                prices=prices, cache_order=cache_order)
        guard_genai_client(self, options)
