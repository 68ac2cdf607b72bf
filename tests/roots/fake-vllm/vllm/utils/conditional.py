"""Conditional definitions (ordinals)."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:

    def pick_backend() -> str:
        return "typing"

else:

    def pick_backend() -> str:
        return "runtime"


try:
    import fastjson as json_impl
except ImportError:
    import json as json_impl


def dumps(obj) -> str:
    return json_impl.dumps(obj)
