"""LLM prices: the table observe uses, copied into prices.json from packages/pricing by
scripts/python-prices.ts (a test fails when the copy is out of date), so the client and the
server never disagree on a model's price."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any, Dict, List, Mapping, Optional, Sequence


# Money is exact to the nano-dollar (packages/pricing/src/money.ts); ties round up.
NANOS_PER_USD = 1_000_000_000


@dataclass(frozen=True)
class ModelPrice:
    """A list price in USD per 1M tokens."""

    provider: str
    model: str
    input_per_million_usd: float
    output_per_million_usd: float
    source: str = "configuration"
    as_of: str = ""


def _key(price: ModelPrice) -> str:
    return f"{price.provider.strip().lower()}\n{price.model.strip().lower()}"


class PriceTable:
    def __init__(self, entries: Sequence[ModelPrice], aliases: Optional[Mapping[str, str]] = None) -> None:
        self._entries: List[ModelPrice] = list(entries)
        self._aliases: Dict[str, str] = {a.strip().lower(): m.strip().lower() for a, m in (aliases or {}).items()}

    @classmethod
    def default(cls, overrides: Sequence[ModelPrice] = ()) -> "PriceTable":
        """The built-in table with overrides applied: same provider+model (case-insensitive) replaces, anything else is added."""
        document: Dict[str, Any] = json.loads(resources.files("vigil").joinpath("prices.json").read_text("utf-8"))
        merged: Dict[str, ModelPrice] = {}
        for raw in document["prices"]:
            price = ModelPrice(
                provider=raw["provider"],
                model=raw["model"],
                input_per_million_usd=float(raw["inputPerMillionUsd"]),
                output_per_million_usd=float(raw["outputPerMillionUsd"]),
                source=raw["source"],
                as_of=raw["asOf"],
            )
            merged[_key(price)] = price
        for override in overrides:
            merged[_key(override)] = override
        return cls(list(merged.values()), document["aliases"])

    def find(self, model: str, provider: Optional[str] = None) -> Optional[ModelPrice]:
        """Looks a model up case-insensitively: exact id, then alias, then the longest table id that
        prefixes ``model`` followed by '-' (dated snapshots such as 'gpt-4o-2024-08-06' bill as 'gpt-4o').
        A non-empty provider restricts the search to that provider."""
        wanted_id = model.strip().lower()
        wanted_provider = "" if provider is None else provider.strip().lower()
        candidates = [e for e in self._entries if wanted_provider == "" or e.provider.strip().lower() == wanted_provider]

        def by_id(target: str) -> Optional[ModelPrice]:
            return next((e for e in candidates if e.model.strip().lower() == target), None)

        exact = by_id(wanted_id)
        if exact is not None:
            return exact
        aliased = self._aliases.get(wanted_id)
        if aliased is not None:
            target = by_id(aliased)
            if target is not None:
                return target
        best: Optional[ModelPrice] = None
        for entry in candidates:
            prefix = entry.model.strip().lower()
            if wanted_id.startswith(prefix + "-") and (best is None or len(prefix) > len(best.model.strip())):
                best = entry
        return best

    def cost_usd(self, model: str, provider: Optional[str], input_tokens: int, output_tokens: int) -> Optional[float]:
        """Cost in USD of one call, to the nano-dollar as observe sums money (no float noise such as
        0.000014849999999999998), or None when the model has no price (unknown is not free)."""
        price = self.find(model, provider)
        if price is None:
            return None
        cost = (input_tokens * price.input_per_million_usd + output_tokens * price.output_per_million_usd) / 1_000_000
        return math.floor(cost * NANOS_PER_USD + 0.5) / NANOS_PER_USD

    def all(self) -> List[ModelPrice]:
        return list(self._entries)
