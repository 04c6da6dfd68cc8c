"""Fixtures shared by the lab's tests."""

from __future__ import annotations

import pytest

from evomem.domain.linkers import pair_reading
from evomem.domain.linkers.pair_reading import Reading
from lab.tests.devtexts import scenario_texts


@pytest.fixture(scope="session")
def scenarios() -> list[list[Reading]]:
    """Each development scenario's notes as the pair linker reads them (one reading per distinct text)."""
    cache: dict[str, Reading] = {}
    return [[cache.setdefault(t, pair_reading.read(t)) for t in texts] for texts in scenario_texts()]
