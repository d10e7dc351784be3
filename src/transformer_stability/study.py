"""What the pipeline needs of a study, declared once by each study (`<study>/pipeline.py`) and
assembled by `registry.py`: the shared layer reads studies only through this object."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformer_stability.claims import ClaimSpec
    from transformer_stability.plotting import FigureSpec
    from transformer_stability.sweeps import Sweep
    from transformer_stability.tables import Table


@dataclass(frozen=True)
class Study:
    """One study: `name` is its config section and its folder under results/; `category` heads
    its figures in the report; `figures`, `sweeps` and `tables` (the models of the tables it
    writes) are its declarations; `settings` gives, for the model of every table not gathered
    from a sweep, the config keys it depends on (settings.py; a sweep declares
    its own); `config_errors` and `input_errors` check its config section
    (constraints between keys, outside inputs such as local data), returning messages that name
    the config key; `claims` are its abstract's claims, which the `claims` rule evaluates on its
    tables."""

    name: str
    category: str
    figures: tuple[FigureSpec, ...]
    sweeps: tuple[Sweep, ...]
    tables: tuple[type[Table], ...]
    settings: Mapping[type[Table], tuple[str, ...]]
    config_errors: Callable[[dict[str, Any]], list[str]]
    input_errors: Callable[[dict[str, Any]], list[str]]
    claims: tuple[ClaimSpec, ...] = ()
