"""Word frequencies: see README.md."""


def top_words(text: str, k: int) -> list[tuple[str, int]]:
    """The k most frequent words of text, most frequent first, ties in alphabetical order."""
    raise NotImplementedError
