"""`PartAttribute`: an attribute of a dashboard object that one of its parts holds, reached from the object as
before (`page.table` reads `page.following.table`), so notebooks and tests keep their names."""
from __future__ import annotations


class PartAttribute:
    """An attribute that is one of a part's own: `table = PartAttribute("following", doc)` in a class reads (and sets)
    `obj.following.table`; a method of the part is reached (and called) the same way."""

    def __init__(self, part: str, doc: str):
        self.part, self.__doc__ = part, doc

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, obj, owner=None):
        return self if obj is None else getattr(getattr(obj, self.part), self.name)

    def __set__(self, obj, value) -> None:
        setattr(getattr(obj, self.part), self.name, value)
