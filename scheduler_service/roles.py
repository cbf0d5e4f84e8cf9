"""What role each route needs, declared on the route and checked in one place.

A route declares its role with ``requires`` (the API's blueprint does it through
``Blueprint.requires``, which also shows it in the OpenAPI document as ``x-required-role`` with
the 403 it may answer); the app checks it before the route runs (``refusal``: the API answers a
problem naming the role, the console a page). A route that declares nothing needs ``admin``: a
route added without thought is closed, not open, and ``tests/integration/api/test_roles.py``
fails until it declares its role.

``read`` reads, ``write`` also changes schedules and their runs, ``admin`` also manages what the
whole tenant shares: signing secrets (and keys, which only the CLI manages, in the store).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from flask import Flask

from shared.ports import Role

View = TypeVar("View", bound=Callable[..., object])

# The attribute of a view function that holds its role.
ATTRIBUTE = "required_role"


def requires(role: Role) -> Callable[[View], View]:
    """Declare the role a view needs."""

    def declare(view: View) -> View:
        setattr(view, ATTRIBUTE, role)
        return view

    return declare


def declared_role(app: Flask, endpoint: str, method: str) -> Role | None:
    """The role the view of ``endpoint`` declares for ``method``, if it declares one (a
    ``MethodView`` declares it on each of its methods)."""
    view = app.view_functions.get(endpoint)
    view_class = getattr(view, "view_class", None)
    if view_class is not None:
        name = "get" if method == "HEAD" else method.lower()
        view = getattr(view_class, name, None)
    role = getattr(view, ATTRIBUTE, None)
    return role if isinstance(role, Role) else None


def required_role(app: Flask, endpoint: str, method: str) -> Role:
    """The role a request needs: the one its view declares, ``admin`` if none is. ``OPTIONS``
    (which Flask answers itself, with the allowed methods) needs ``read``."""
    if method == "OPTIONS":
        return Role.READ
    return declared_role(app, endpoint, method) or Role.ADMIN


def refusal(held: Role, needed: Role) -> str | None:
    """Why a key of role ``held`` may not do what needs ``needed``; ``None`` if it may."""
    if held.grants(needed):
        return None
    others = " or admin" if needed is Role.WRITE else ""
    return f"this needs a key with role {needed.value}{others}; this key's role is {held.value}"
