"""How engine records travel between processes: pickled as their class and field values."""
from __future__ import annotations

from dataclasses import fields
from operator import attrgetter


def pickle_by_fields(cls: type) -> type:
    """Make `cls` (a dataclass whose fields are all init arguments) pickle as its class and
    its field values, fetched in one C-level call: cheaper than the generic state protocol of
    slotted dataclasses, which runs Python code per object. Messages, batches and history
    records are pickled on every hop between processes."""
    names = [f.name for f in fields(cls)]
    if len(names) == 1:
        get_one = attrgetter(names[0])
        cls.__reduce__ = lambda self: (cls, (get_one(self),))
    elif names:
        get = attrgetter(*names)
        cls.__reduce__ = lambda self: (cls, get(self))
    else:
        cls.__reduce__ = lambda self: (cls, ())
    return cls
