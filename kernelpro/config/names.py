"""Settings that name a seam (``search.policy``, ``harness.backend``, ``forecast.gate``, ``forecast.forecaster``):
a plain string checked against the seam's registry in ``kernelpro.seams`` when the settings are read, so a name
registered at run time is accepted and any other is refused with the registry's list of choices."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from kernelpro.registry import Registry, UnknownName


def named_in(registry: Registry, *, refused: Mapping[str, str] | None = None) -> AfterValidator:
    """A validator that passes a name ``registry`` offers; ``refused`` maps names it offers that this setting
    cannot take to the reason."""

    def check(name: str) -> str:
        if refused and name in refused:
            raise PydanticCustomError("unusable_name", "{reason}", {"reason": refused[name]})
        try:
            return registry.check(name)
        except UnknownName as error:
            raise PydanticCustomError("unknown_name", "{message}", {"message": str(error)}) from None

    return AfterValidator(check)
