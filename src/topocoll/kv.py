"""``key=value`` lists: the one reader behind parallelism specs, model fields, synthesizer
options and ``topocoll libra --job``.

Topology specs have a richer grammar (positional values, bare flags, nested parentheses)
and keep their own tokenizer in :mod:`topocoll.topology.spec`; the values of every list
are converted by its caller (integers, rates, names), with :mod:`topocoll.units` for
quantities.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

from .errors import InputError

__all__ = ["kv_pairs"]


def kv_pairs(text: str | Iterable[str], *, what: str,
             keys: Collection[str] | None = None,
             item: Callable[[str], str] = lambda k: k,
             lower: bool = True) -> dict[str, str]:
    """The ``key=value`` parts of ``text`` (comma-separated, or an iterable of parts), in
    order, values stripped; keys lower-cased when ``lower``.

    Parameters
    ----------
    text : str or iterable of str
    what : str
        What a key is called in messages ("parallelism key", "model field").
    keys : collection of str, optional
        The keys allowed (any when None).
    item : callable
        The offending item of an error from the key (or the part, when it has none).
    lower : bool

    Raises
    ------
    InputError
        Naming the part without ``=``, the key not in ``keys`` (and the valid ones), or the
        key given twice.

    Examples
    --------
    >>> kv_pairs("tp=8, PP=2", what="parallelism key", keys=("tp", "pp"))
    {'tp': '8', 'pp': '2'}
    >>> kv_pairs("tp=8,tp=4", what="parallelism key")
    Traceback (most recent call last):
    ...
    topocoll.errors.InputError: parallelism key 'tp' given twice
    """
    parts = text.split(",") if isinstance(text, str) else list(text)
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in parts)):
        k, eq, v = part.partition("=")
        k = k.strip().lower() if lower else k.strip()
        if not eq or not k or (keys is not None and k not in keys):
            valid = f"one of {', '.join(sorted(keys))} " if keys is not None else ""
            raise InputError(f"{what} must be {valid}as key=value, got {part!r}",
                             item=item(k or part))
        if k in out:
            raise InputError(f"{what} {k!r} given twice", item=item(k))
        out[k] = v.strip()
    return out
