# SPDX-License-Identifier: Apache-2.0
"""A small stand-in for the part of pydantic's BaseModel that llm-sandbox's
configuration classes (SecurityPolicy, SessionConfig, PoolConfig) show to
their users: keyword construction with defaults, bounds and conversions,
model_dump, model_validate and model_copy.  hutch does not require
pydantic; where pydantic is installed, a field that breaks its bound raises
pydantic's own ValidationError (what code written for llm-sandbox
catches), else a ValueError."""

from __future__ import annotations

import copy
from typing import Any, Callable, Dict, Optional

_MISSING = object()


class FieldError(ValueError):
    """A field that breaks its bound, where pydantic is not installed."""


def _fail(model: str, name: str, kind: str, value: Any, limit: Any) -> None:
    try:
        from pydantic_core import ValidationError as PydanticError
    except ImportError:
        op = {"greater_than": ">", "greater_than_equal": ">="}[kind]
        raise FieldError(f"{model}.{name}: {value!r} must be {op} {limit}") from None
    ctx = {"gt": limit} if kind == "greater_than" else {"ge": limit}
    raise PydanticError.from_exception_data(model, [{"type": kind, "loc": (name,), "input": value, "ctx": ctx}])


class Field:
    """A model field: its default (or default_factory), an optional
    conversion of the value given, and optional lower bounds."""

    def __init__(
        self,
        default: Any = _MISSING,
        *,
        default_factory: Optional[Callable[[], Any]] = None,
        convert: Optional[Callable[[Any], Any]] = None,
        ge: Any = None,
        gt: Any = None,
    ):
        self.default, self.factory, self.convert, self.ge, self.gt = default, default_factory, convert, ge, gt
        self.name = ""

    def initial(self, model: str) -> Any:
        if self.factory is not None:
            return self.factory()
        if self.default is _MISSING:
            raise TypeError(f"{model}: missing required field {self.name!r}")
        return copy.copy(self.default)

    def check(self, model: str, value: Any) -> Any:
        if value is None:
            return value
        if self.convert is not None:
            value = self.convert(value)
        if self.ge is not None and value < self.ge:
            _fail(model, self.name, "greater_than_equal", value, self.ge)
        if self.gt is not None and value <= self.gt:
            _fail(model, self.name, "greater_than", value, self.gt)
        return value


class Model:
    """Fields are the class's Field attributes, in order of definition;
    unknown keywords are ignored (pydantic's default).  A subclass checks
    the whole after construction in _check()."""

    _fields: Dict[str, Field] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        fields = dict(getattr(cls, "_fields", {}))
        for name, value in list(vars(cls).items()):
            if isinstance(value, Field):
                value.name = name
                fields[name] = value
                delattr(cls, name)
        cls._fields = fields

    def __init__(self, **values: Any) -> None:
        model = type(self).__name__
        for name, f in self._fields.items():
            value = values[name] if name in values else f.initial(model)
            object.__setattr__(self, name, f.check(model, value))
        self._check()

    def _check(self) -> None:
        pass

    def model_dump(self) -> Dict[str, Any]:
        return {name: _dump(getattr(self, name)) for name in self._fields}

    @classmethod
    def model_validate(cls, data: Any) -> Any:
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__}.model_validate: a dict, not {type(data).__name__}")
        return cls(**data)

    def model_copy(self, *, update: Optional[Dict[str, Any]] = None, deep: bool = False) -> Any:
        dup = copy.deepcopy(self) if deep else copy.copy(self)
        for name, value in (update or {}).items():
            setattr(dup, name, value)
        return dup

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._fields)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
        return f"{type(self).__name__}({inner})"


def _dump(value: Any) -> Any:
    if isinstance(value, Model):
        return value.model_dump()
    if isinstance(value, list):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


def model_list(item: type) -> Callable[[Any], Any]:
    """A conversion for a list of models, each given as one or as a dict."""

    def convert(values: Any) -> Any:
        return [v if isinstance(v, item) else item.model_validate(v) for v in values]

    return convert
