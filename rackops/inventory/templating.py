"""Templating an inventory's variables without running anything.

Reading a design (lint, render, validate, capture, report) must not run code the inventory
brings. Ansible's own templating can: lookups run commands, ``{% include %}`` and
``{% import %}`` read template files, and a ``#jinja2:`` header changes the delimiters so a
lookup hides from a scan for ``{{``. Without ``--allow-lookups`` rackops therefore templates
with its own environment:

* a Jinja **sandbox** (no attribute escapes) with **no loader** (include, import, extends
  cannot reach a file) and **no lookup, query or q** at all, whatever the delimiters;
* a ``#jinja2:`` header is refused, not interpreted;
* only filters without side effects: Jinja's own and a listed set of Ansible's pure ones
  (no ``fileglob``, ``expandvars``, ``realpath``: they read the machine; no ``regex_*``: a
  pattern from the inventory could backtrack for hours);
* bounded work: numbers that size a string, a list or a loop are capped, string formatting
  with huge widths is refused, output size is capped, and (on the main thread) a wall-clock
  deadline stops a template that loops;
* only values Ansible trusts as templates are templated (``!unsafe`` stays text).

Variables reference each other as in Ansible: a variable is templated when a template reads
it (lazily, with cycle detection).
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import re
import resource
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jinja2
from jinja2.nativetypes import NativeCodeGenerator
from jinja2.sandbox import ImmutableSandboxedEnvironment

HEADER = "#jinja2:"
MAX_INT_ARG = 100_000  # a number given to a filter, method or range: widths, counts, repeats
MAX_TEXT = 1_000_000  # characters of any string a template makes
MAX_DEPTH = 32  # variables that template variables that template ...
DEADLINE_S = 5.0  # one variable's templating, wall clock
TOTAL_S = 20.0  # all templating of one inventory load, wall clock
MAX_MEMORY = 512 * 2**20  # what one variable's templating may add to the process
_WIDE_FORMAT = re.compile(r"\d{6,}|%[^a-zA-Z%]*\*|\{[^}]*\*")

# Ansible filters that compute from their arguments only
_ANSIBLE_FILTERS = {
    "ansible.plugins.filter.core": (
        "b64decode b64encode basename bool checksum combine comment dict2items dirname flatten "
        "from_json from_yaml hash items2dict mandatory md5 normpath path_join quote "
        "regex_escape sha1 split splitext subelements ternary to_json to_nice_json "
        "to_nice_yaml to_uuid to_yaml type_debug"
    ),
    "ansible.plugins.filter.mathstuff": (
        "difference human_readable human_to_bytes intersect log pow root "
        "symmetric_difference union unique"
    ),
}


class Refused(Exception):
    """A template that reading a design does not run; the message says why."""


class _Timeout(BaseException):
    """The deadline: a BaseException, so no ``except Exception`` in Jinja swallows it."""


class TemplateFailed(Exception):
    """A template that cannot be rendered (an undefined variable, a type error, ...)."""


class _Tpl(str):
    """A string Ansible trusts as a template (what is not one stays text, like !unsafe)."""


def plain_tree(value: Any) -> Any:
    """ansible-core's tagged values as builtins, its trusted template strings as _Tpl."""
    try:
        from ansible._internal._datatag._tags import TrustedAsTemplate
    except ImportError:  # pragma: no cover - older ansible-core: every string is trusted
        TrustedAsTemplate = None
    if isinstance(value, Mapping):
        return {plain_tree(k): plain_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_tree(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        trusted = TrustedAsTemplate is None or TrustedAsTemplate.is_tagged_on(value)
        return _Tpl(value) if trusted and _is_template(value) else str(value)
    for kind in (int, float):
        if isinstance(value, kind):
            return kind(value)
    return value  # e.g. a vaulted value: left for the model to refuse by type


def is_template(value: Any) -> bool:
    """A string Ansible trusts as a template (a _Tpl)."""
    return isinstance(value, _Tpl)


def _is_template(text: str) -> bool:
    return text.startswith(HEADER) or any(m in text for m in ("{{", "{%", "{#"))


def _check_number(value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT_ARG:
        raise Refused(f"the number {value} is too large to size a string, list or loop")
    if isinstance(value, float) and math.isfinite(value) and abs(value) > MAX_INT_ARG:
        raise Refused(f"the number {value:g} is too large to size a string, list or loop")


def _check_text(value: Any) -> Any:
    if isinstance(value, str | list | tuple | dict) and len(value) > MAX_TEXT:
        raise Refused(f"a value of {len(value)} items or characters (limit {MAX_TEXT})")
    return value


def _check_format(fmt: Any) -> None:
    if isinstance(fmt, str) and _WIDE_FORMAT.search(fmt):
        raise Refused(f"string formatting with a huge or computed width ({fmt[:40]!r})")


def _guarded(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(fn)  # keeps jinja's pass_context/pass_environment marks
    def call(*args: Any, **kwargs: Any) -> Any:
        for a in (*args[1:], *kwargs.values()):
            _check_number(a)
        if name == "format" and args:
            _check_format(args[0])
        return _check_text(fn(*args, **kwargs))

    return call


def _concat(values: Iterator[Any]) -> Any:
    """A template that is one expression gives that value (``{{ 9000 }}`` is the int 9000,
    as in Ansible); anything else gives text, never re-read as a literal."""
    head = list(itertools.islice(values, 2))
    if not head:
        return ""
    if len(head) == 1:
        return head[0]
    return "".join(str(v) for v in itertools.chain(head, values))


@contextmanager
def _memory_cap(extra: int) -> Iterator[None]:
    """While templating, the process may grow by ``extra`` bytes at most: past that an
    allocation fails (MemoryError) instead of taking the machine's memory. Linux only."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        pages = int(Path("/proc/self/statm").read_text().split()[0])
    except (OSError, ValueError, AttributeError):
        yield
        return
    cap = pages * os.sysconf("SC_PAGE_SIZE") + extra
    for limit in (soft, hard):
        if limit != resource.RLIM_INFINITY:
            cap = min(cap, limit)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


class _Env(ImmutableSandboxedEnvironment):
    """Sandboxed, loader-less, native-typed (as Ansible: ``{{ 9000 }}`` is the int 9000)."""

    code_generator_class = NativeCodeGenerator
    intercepted_binops = frozenset({"*", "**", "%", "+"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for a, b in ((left, right), (right, left)):
                sized = isinstance(a, str | list | tuple) and isinstance(b, int)
                if sized and len(a) * max(b, 0) > MAX_TEXT:
                    raise Refused(f"repeating a value {b} times makes it too large")
        ints = isinstance(left, int) and isinstance(right, int)
        if operator == "**" and ints and abs(right) > 64 and abs(left) > 1:
            raise Refused(f"{left} ** {right} is too large a number")
        if operator == "%":
            _check_format(left)
        return _check_text(super().call_binop(context, operator, left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        for a in (*args, *kwargs.values()):
            _check_number(a)
        return _check_text(super().call(__context, __obj, *args, **kwargs))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        _check_format(getattr(value, "__self__", None))  # str.format / format_map
        return super().wrap_str_format(value)


@jinja2.pass_context
def _at_run_time(context: Any, value: Any) -> Any:
    return value


def _bounded_range(*args: int) -> range:
    for a in args:
        _check_number(a)
    return range(*args)


def _env() -> _Env:
    # optimized=False: no constant folding while compiling (Jinja folds constant filters
    # and swallows any error there, so `'<bomb>'|from_yaml` would run outside every bound)
    # and a finalize that needs the render context: Jinja then never evaluates an output
    # expression while compiling (it would, swallowing every error, deadline included)
    env = _Env(
        loader=None,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        optimized=False,
        finalize=_at_run_time,
    )
    env.globals = {"range": _bounded_range, "dict": dict, "true": True, "false": False}
    filters: dict[str, Callable[..., Any]] = dict(env.filters)
    for module, names in _ANSIBLE_FILTERS.items():
        found = __import__(module, fromlist=["FilterModule"]).FilterModule().filters()
        filters.update({n: found[n] for n in names.split()})
    env.filters = {n: _guarded(f, n) for n, f in filters.items()}
    env.filters["d"] = env.filters["default"]
    return env


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only; the other bounds still hold
        return

    def expired(signum: int, frame: Any) -> None:
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, expired)
    # and again every 0.1 s after: code that catches every exception does not outlive it
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.1)
    try:
        yield
    except _Timeout as exc:
        raise Refused(f"templating took longer than {seconds:g} s") from exc
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _Vars(Mapping[str, Any]):
    """The host's variables, each templated when a template first reads it."""

    def __init__(self, templar: DesignTemplar) -> None:
        self._t = templar

    def __getitem__(self, key: str) -> Any:
        if key in self._t.raw:
            return self._t.variable(key)
        if key in self._t.env.globals:
            return self._t.env.globals[key]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key in self._t.raw or key in self._t.env.globals

    def __iter__(self) -> Iterator[str]:
        return iter(self._t.raw)

    def __len__(self) -> int:
        return len(self._t.raw)


class Budget:
    """The time all templating of one inventory may take, shared by its hosts (a template
    that loops is refused once, not once per node of a thousand-node rack)."""

    def __init__(self, total_s: float = TOTAL_S) -> None:
        self.left = total_s
        self.total = total_s
        self.timed_out: set[str] = set()  # template texts that ran out of time


class PlainVars(Mapping[str, Any]):
    """A host's variables as :func:`plain_tree` gives them, each converted when a template
    first reads it: a variable no template reads costs nothing, however large (an alias
    bomb of a million values, under the file bound, was walked once per host)."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self._raw = raw
        self._plain: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._plain:
            self._plain[name] = plain_tree(self._raw[name])
        return self._plain[name]

    def __contains__(self, name: object) -> bool:
        return name in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


class DesignTemplar:
    """Templates values of one host; ``raw`` is its variables as :func:`plain_tree` gives."""

    def __init__(self, raw: Mapping[str, Any], budget: Budget | None = None) -> None:
        self.raw = raw
        self.env = _env()
        self.budget = budget or Budget()
        self._done: dict[str, Any] = {}
        self._busy: list[str] = []

    def variable(self, name: str) -> Any:
        if name in self._done:
            return self._done[name]
        if name in self._busy:
            chain = " -> ".join([*self._busy[self._busy.index(name) :], name])
            raise TemplateFailed(f"variables refer to each other in a loop: {chain}")
        if len(self._busy) >= MAX_DEPTH:
            raise Refused(f"variables nest deeper than {MAX_DEPTH} templates")
        self._busy.append(name)
        try:
            self._done[name] = self._value(self.raw[name])
        finally:
            self._busy.pop()
        return self._done[name]

    def template(self, value: Any) -> Any:
        """``value`` with every trusted template in it rendered; Refused or TemplateFailed."""
        key = repr(value)
        if key in self.budget.timed_out:
            raise Refused(f"templating took longer than {DEADLINE_S:g} s (on another host)")
        seconds = min(DEADLINE_S, self.budget.left)
        if seconds <= 0:
            raise Refused(f"templating this inventory took longer than {self.budget.total:g} s")
        started = time.monotonic()
        try:
            with _deadline(seconds), _memory_cap(MAX_MEMORY):
                return self._value(value)
        except MemoryError as exc:
            raise Refused(f"templating needed more than {MAX_MEMORY >> 20} MiB") from exc
        except Refused as exc:
            if "longer than" in str(exc):
                self.budget.timed_out.add(key)
            raise
        finally:
            self.budget.left -= time.monotonic() - started

    def _value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self._value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._value(v) for v in value]
        if isinstance(value, _Tpl):
            return self._render(str(value))
        return value

    def _render(self, text: str) -> Any:
        if text.startswith(HEADER):
            raise Refused(
                "a #jinja2: header (it changes the template delimiters, so what the template "
                "runs cannot be seen)"
            )
        _check_text(text)
        try:
            tmpl = self.env.from_string(text)
            ctx = tmpl.new_context(_Vars(self), shared=True)  # type: ignore[arg-type]
            out = _concat(tmpl.root_render_func(ctx))
        except (Refused, TemplateFailed):
            raise
        except jinja2.exceptions.SecurityError as exc:
            raise Refused(f"the template reaches outside the sandbox ({exc})") from exc
        except TypeError as exc:
            if "no loader" in str(exc):
                raise Refused("an include, import or extends of a template file") from exc
            raise TemplateFailed(str(exc)) from exc
        except jinja2.TemplateError as exc:
            if "no filter named" in str(exc).lower() or "no test named" in str(exc).lower():
                raise Refused(f"{exc.message} that reading a design may use") from exc
            if re.match(r"'(lookup|query|q)' is undefined", str(exc)):
                raise Refused("a lookup (it can run commands)") from exc
            raise TemplateFailed(exc.message or type(exc).__name__) from exc
        except RecursionError as exc:
            raise Refused("the template nests too deeply") from exc
        except (ValueError, ArithmeticError, LookupError, AttributeError) as exc:
            raise TemplateFailed(f"{type(exc).__name__}: {exc}") from exc
        if isinstance(out, jinja2.Undefined):
            try:
                str(out)  # StrictUndefined: raises, naming the variable
            except jinja2.UndefinedError as exc:
                if re.match(r"'(lookup|query|q)' is undefined", str(exc)):
                    raise Refused("a lookup (it can run commands)") from exc
                raise TemplateFailed(exc.message or "undefined") from exc
        return _check_text(out)
