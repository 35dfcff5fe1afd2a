"""Python client of the Karotte environment server (``karotte serve``), standard library only."""

from .client import (
    CreatedEpisode,
    CreatedGroup,
    Event,
    KarotteClient,
    KarotteRequestError,
    TurnAnswer,
)

__all__ = [
    "CreatedEpisode",
    "CreatedGroup",
    "Event",
    "KarotteClient",
    "KarotteRequestError",
    "TurnAnswer",
]
__version__ = "0.1.0"
