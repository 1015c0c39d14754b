"""What a model needs from the data, and what the task collates: two typed, immutable declarations.

* :class:`SyntaxNeeds` is a model's declaration (``model.syntax_needs()``): the syntax fields of each side
  it reads (as inputs or as supervision), which of them are forward() inputs, and the subword parent
  strategy and target coordinates it is built for.
* :class:`SyntaxRequest` is what the ``syntax_translation`` task hands its datasets: the fields to collate.
  :func:`resolve_request` computes it from the task's options and the needs of every model built on the
  task (an ensemble: the union); the task replaces its request when a model is built, never mutates it.

Field names: :data:`SIDE_FIELDS`; coordinates of target fields: :data:`TARGET_COORDINATES` (docs/design.md,
"Index conventions").
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import FrozenSet, Iterable, Optional

from fairseq_syntax.data.alignment.parent_strategies import STRATEGIES
from fairseq_syntax.errors import OptionError

logger = logging.getLogger(__name__)

SIDE_FIELDS = ("parents", "depths", "labels", "words")
TARGET_COORDINATES = ("target", "decoder_input")


def _check_fields(fields: Iterable[str], what: str) -> FrozenSet[str]:
    fields = frozenset(fields)
    bad = fields - set(SIDE_FIELDS)
    if bad:
        raise ValueError(f"unknown {what} syntax field(s) {sorted(bad)}; known: {SIDE_FIELDS}")
    return fields


def _check_strategy(strategy: Optional[str]) -> None:
    if strategy is not None and strategy not in STRATEGIES:
        raise ValueError(f"parent strategy must be one of {STRATEGIES}, not {strategy!r}")


def _check_coordinates(coordinates: Optional[str]) -> None:
    if coordinates is not None and coordinates not in TARGET_COORDINATES:
        raise ValueError(f"target coordinates must be one of {TARGET_COORDINATES}, not {coordinates!r}")


def _check_declaration(declaration) -> None:
    """Fields as frozensets (the side fields checked by name), strategies and coordinates checked: what both
    declarations below hold to when they are made."""
    object.__setattr__(declaration, "source", _check_fields(declaration.source, "source"))
    object.__setattr__(declaration, "target", _check_fields(declaration.target, "target"))
    object.__setattr__(declaration, "inputs", frozenset(declaration.inputs))
    _check_strategy(declaration.strategy)
    _check_strategy(declaration.target_strategy)
    _check_coordinates(declaration.target_coordinates)


@dataclass(frozen=True)
class SyntaxNeeds:
    """A model's declaration of what it reads from the data.

    ``source`` / ``target``: fields of :data:`SIDE_FIELDS` per side. ``inputs``: those the model's forward()
    takes (``"src_parents"``, ``"src_depths"``, ``"src_labels"``): a split without them cannot be decoded;
    the other fields only supervise training. ``strategy``: the subword parent strategy of the source side
    (and of the target, unless ``target_strategy``); None: no preference. ``target_coordinates``: which
    decoder state a target field's row stands for (None: no target fields).
    """

    source: FrozenSet[str] = frozenset()
    target: FrozenSet[str] = frozenset()
    inputs: FrozenSet[str] = frozenset()
    strategy: Optional[str] = None
    target_strategy: Optional[str] = None
    target_coordinates: Optional[str] = None

    def __post_init__(self):
        _check_declaration(self)


@dataclass(frozen=True)
class SyntaxRequest:
    """Which syntax fields a task's datasets collate (see the module docstring)."""

    strategy: str = "chain"
    source: FrozenSet[str] = frozenset()
    target: FrozenSet[str] = frozenset()
    inputs: FrozenSet[str] = frozenset()
    target_strategy: Optional[str] = None
    target_coordinates: str = "target"

    def __post_init__(self):
        _check_declaration(self)

    def strategy_of(self, side: str) -> str:
        if side == "target" and self.target_strategy is not None:
            return self.target_strategy
        return self.strategy

    def needs(self, side: str) -> FrozenSet[str]:
        return self.source if side == "source" else self.target

    def required(self, side: str) -> FrozenSet[str]:
        """Fields of a side the model takes as inputs: a split must have them.

        The other fields only supervise training (e.g. DBSA's gold parents);
        a split without syntax data (a test set at decoding time) simply
        comes without them.
        """
        prefix = "src_" if side == "source" else "tgt_"
        return frozenset(f for f in self.needs(side) if prefix + f in self.inputs)


def resolve_request(source: Optional[FrozenSet[str]] = None, target: Optional[FrozenSet[str]] = None,
                    strategy: Optional[str] = None, models: Iterable[SyntaxNeeds] = ()) -> SyntaxRequest:
    """The request of a task whose options give ``source`` / ``target`` fields (None: 'auto', whatever the
    models need) and ``strategy`` (None: 'auto'), for the needs of ``models`` (in the order they were built).

    A model that needs a field the options leave out is an error; a model built for another parent strategy
    than an explicit one gets it with a warning (the options win)."""
    req = SyntaxRequest(strategy=strategy or "chain", source=source or frozenset(), target=target or frozenset())
    explicit = {"source": source, "target": target}
    chosen = {}  # strategy key -> the strategy a model asked for (two models of an ensemble must agree)
    for needs in models:
        fields = {}
        for side in ("source", "target"):
            want = getattr(needs, side)
            if explicit[side] is None:
                fields[side] = req.needs(side) | want
            else:
                missing = want - explicit[side]
                if missing:
                    raise OptionError(
                        f"the model needs {side} syntax field(s) {sorted(missing)} but --{side}-syntax is "
                        f"{','.join(sorted(explicit[side])) or 'none'}; add them or use 'auto'")
                fields[side] = explicit[side]
        for key, side in (("strategy", "source side"), ("target_strategy", "target side")):  # in this order:
            wanted = getattr(needs, key)  # the target side follows the source's unless the model says otherwise
            current = req.strategy_of("target") if key == "target_strategy" else req.strategy
            if wanted is not None and strategy is None and chosen.get(key, wanted) != wanted:
                raise OptionError(f"the models need different parent strategies on the {side} ({chosen[key]!r} and "
                                 f"{wanted!r}): an ensemble reads one; give --parent-strategy")
            if wanted is not None:
                chosen[key] = wanted
            if wanted is None or wanted == current:
                continue
            if strategy is not None:
                logger.warning("the model is built for parent strategy %r (%s) but --parent-strategy is %r (given "
                               "here, or adopted from the checkpoint's training command)", wanted, side, strategy)
            else:
                req = replace(req, **{key: wanted})
        req = replace(req, source=fields["source"], target=fields["target"], inputs=req.inputs | needs.inputs,
                      target_coordinates=needs.target_coordinates or req.target_coordinates)
    return req
