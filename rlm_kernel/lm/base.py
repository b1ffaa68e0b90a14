"""The LM port: what every backend implements, and the records it returns.

A backend turns a list of chat messages into a :class:`Completion`. The engine
and the sub-call pool only ever see this protocol, so tests, replay and real
providers are interchangeable.

:class:`BaseLM` owns one call: it times it, buffers the streamed text, stops a
stream that loops, maps the SDK's errors and builds the :class:`Completion`
with its cost. A provider only sends its request and reads its reply
(:meth:`BaseLM._send`, :meth:`BaseLM._stream`, :meth:`BaseLM._error`).
"""

from __future__ import annotations

import abc
import contextlib
import contextvars
import fnmatch
import functools
import ssl
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypedDict, runtime_checkable

from ..tools import ToolRequest
from ..usage import Price, UsageRecord, as_prices, price_for
from .tokens import estimate_tokens as estimate_tokens

if TYPE_CHECKING:
    from ..errors import RLMError

__all__ = [
    "Message",
    "Completion",
    "LMClient",
    "BaseLM",
    "Received",
    "SeesImages",
    "TokenCallback",
    "RepetitionGuard",
    "repeated_lines",
    "without_repeats",
    "estimate_tokens",
    "price_of",
]

Role = Literal["system", "user", "assistant", "tool"]


class Message(TypedDict, total=False):
    role: Role
    content: str
    cache: bool  # ask the provider to cache the prefix up to and including this message
    tool_calls: list[ToolRequest]  # an assistant turn that asked for tools
    tool_call_id: str  # a tool's result (role "tool"): the request it answers
    # A user turn's images (rlm_kernel.images.Image), after its text; the content stays a string, so
    # that redaction, events and counting read the text as before.
    images: list[Any]


TokenCallback = Callable[[str], None]


@dataclass(frozen=True)
class Completion:
    """One LM reply with the usage the provider reported.

    ``price`` is what the client that made it charges for ``model`` (its own ``prices=`` or the
    table's, when it replied); None, as in a reply built by hand, means the process-wide table's
    price when asked. It takes no part in equality: two replies are the same whatever they cost."""

    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    latency_s: float = 0.0
    extra: dict = field(default_factory=dict)
    written_tokens: int = 0  # of input_tokens, those written to the provider's prompt cache
    price: Price | None = field(default=None, compare=False, repr=False)
    tool_calls: tuple[ToolRequest, ...] = ()  # the tools the model asked for, when offered some

    @property
    def cost(self) -> float | None:
        """US dollars for this reply; None when its model has no price anywhere."""
        price = self.price or price_for(self.model)
        return (
            None
            if price is None
            else price.cost(self.input_tokens, self.output_tokens, self.cached_tokens, self.written_tokens)
        )

    @property
    def usage(self) -> UsageRecord:
        """Tokens and cost in the form the events carry (``RootReply(**completion.usage.fields())``)."""
        return UsageRecord.of(self)


@runtime_checkable
class LMClient(Protocol):
    """An async chat model. ``context_window`` is None when unknown; ``continues_reply`` says
    whether a trailing assistant message is continued (llama.cpp) rather than answered."""

    model_name: str
    context_window: int | None
    continues_reply: bool

    async def complete(
        self,
        messages: list[Message],
        *,
        on_token: TokenCallback | None = None,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        sampling: Mapping[str, Any] | None = None,
    ) -> Completion: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class SeesImages(Protocol):
    """A client that says whether its model takes images (``llm_query(images=)``); one that does not
    implement this takes none."""

    def sees_images(self) -> bool: ...


def price_of(lm: LMClient, model: str | None = None) -> Price | None:
    """What ``lm`` charges for ``model`` (its own by default): its own prices where it has any (a
    :class:`BaseLM`, or a wrapper with a ``price`` method), else the process-wide table's."""
    own = getattr(lm, "price", None)
    return own(model) if callable(own) else price_for(model or lm.model_name)


@dataclass
class Received:
    """What a provider read of one reply; :class:`BaseLM` makes the :class:`Completion` of it.

    ``text`` None means the text is the streamed deltas, joined; ``tokens`` None means the
    provider reported no usage (then a stream stopped for looping gets an estimate, else zeros)."""

    text: str | None = None
    tokens: tuple[int, int, int] | None = None  # input (cached included), output, cached
    written: int = 0  # input tokens written to the prompt cache (Anthropic reports them)
    finish: str | None = None  # the provider's finish or stop reason
    response_model: str | None = None  # the model name the server answered with; None: the client's
    model: str | None = None  # the model to report and price, where not the client's (a replay)
    tool_calls: list[ToolRequest] = field(default_factory=list)


class BaseLM(abc.ABC):
    """An :class:`LMClient` whose ``complete`` is written once. Subclasses say how to send a request
    and read its reply, whole (:meth:`_send`) or streamed (:meth:`_stream`), and which of their
    exceptions are the provider's errors (:meth:`_error`)."""

    # The key of ``Completion.extra`` that holds the finish reason: each provider's own word.
    finish_key: ClassVar[str] = "finish_reason"
    # Whether a stream that falls into a loop is stopped (``finish`` "repetition").
    guards_repetition: ClassVar[bool] = True
    # Whether a reply without a finish reason is the provider's error (a cut stream, an empty
    # ``choices`` list, a body of another kind): a replay gives back what was recorded.
    requires_finish: ClassVar[bool] = True
    # The models that take images, as fnmatch patterns of their names (the part after a "vendor/").
    vision_models: ClassVar[tuple[str, ...]] = ()
    # Whether this client's model takes images, as its backend_kwargs say; None: by the table.
    vision: bool | None = None

    def __init__(
        self,
        model_name: str,
        *,
        context_window: int | None = None,
        continues_reply: bool = False,
        prices: Mapping[str, Any] | None = None,
    ) -> None:
        self.model_name = model_name
        self.context_window = context_window
        # Whether the server continues a trailing assistant message (llama.cpp does), so that a
        # reply can be started for the model.
        self.continues_reply = continues_reply
        # This client's own prices, model name (or prefix) to price: they come before the
        # process-wide table, so two clients of one process can price one model differently.
        self.prices: dict[str, Price] = as_prices(prices)

    def sees_images(self) -> bool:
        """Whether the model takes images: as ``backend_kwargs={"vision": ...}`` says, else by the
        backend's table of vision models."""
        if self.vision is not None:
            return self.vision
        name = self.model_name.rsplit("/", 1)[-1]
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.vision_models)

    def price(self, model: str | None = None) -> Price | None:
        """What this client charges for ``model`` (its own by default); None when unknown."""
        return price_for(model or self.model_name, self.prices)

    async def complete(
        self,
        messages: list[Message],
        *,
        on_token: TokenCallback | None = None,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        sampling: Mapping[str, Any] | None = None,
    ) -> Completion:
        """Send one request; stream it when ``on_token`` wants the text as it comes, and stop reading a
        stream that has fallen into a loop (finish reason ``repetition``). ``tools`` (each a
        :meth:`~rlm_kernel.tools.Tool.spec`) are offered for function calling, on a request that
        is not streamed; the calls asked for are the completion's ``tool_calls``. ``sampling``
        (``temperature``, ``seed``) applies to this request alone."""
        token = _SAMPLING.set(sampling)
        try:
            return await self._complete(messages, on_token, max_tokens, stop, tools)
        finally:
            _SAMPLING.reset(token)

    async def _complete(
        self,
        messages: list[Message],
        on_token: TokenCallback | None,
        max_tokens: int | None,
        stop: Sequence[str] | None,
        tools: Sequence[Mapping[str, Any]] | None,
    ) -> Completion:
        started = now()
        parts: list[str] = []
        messages = [_encodable(m) for m in messages]

        async def send() -> Received:
            if tools:
                return await self._send(messages, max_tokens, stop, tools=tools)
            if on_token is None:
                return await self._send(messages, max_tokens, stop)
            return await self._streamed(messages, max_tokens, stop, on_token, parts)

        for attempt in (1, 2):
            try:
                received = await send()
                break
            except _CallbackFailed as failed:  # the caller's own error, not the provider's
                raise failed.error from None
            except Exception as exc:  # the provider boundary: SDK errors become ProviderError, bugs go on
                if attempt == 1 and not parts and self._unanswered(exc):
                    continue  # once: the request was never read, so it is not asked twice
                # A body that does not parse (not JSON, cut, invalid UTF-8, the wrong shape) is the
                # provider's; other exceptions are bugs, and go through as they are.
                error = self._error(exc) or (self._unreadable(exc) if isinstance(exc, ValueError) else None)
                if error is None:
                    raise
                raise error from exc
        if received.finish is None and self.requires_finish:
            raise self._unreadable(None)
        return self._completion(messages, received, parts, now() - started)

    async def _streamed(
        self,
        messages: list[Message],
        max_tokens: int | None,
        stop: Sequence[str] | None,
        on_token: TokenCallback,
        parts: list[str],
    ) -> Received:
        """Read a streamed reply into ``parts``, handing each piece to ``on_token``; a stream that has
        fallen into a loop is left (finish reason ``repetition``)."""
        received = Received()
        guard = RepetitionGuard() if self.guards_repetition else None
        # aclosing: leaving the loop early closes the provider's stream (and its connection) now.
        async with contextlib.aclosing(self._stream(messages, max_tokens, stop, received)) as deltas:
            async for delta in deltas:
                if not delta:
                    continue
                parts.append(delta)
                try:
                    on_token(delta)
                except Exception as exc:  # the caller's callback: its error is raised as its own
                    raise _CallbackFailed(exc) from exc
                if guard is not None and guard.feed(delta):
                    received.finish, received.text = "repetition", None  # the text read so far
                    break
        return received

    def _unanswered(self, exc: Exception) -> bool:
        """Whether ``exc`` says the server closed the connection before it answered (a server of one's
        own may close a kept-alive connection as a request goes out on it): worth one more try."""
        return False

    def _unreadable(self, exc: Exception | None) -> RLMError:
        """A reply that could not be read (not JSON, cut, invalid UTF-8, no choices, no finish
        reason): the provider's error, in one line."""
        from ..errors import ProviderError

        if exc is None:
            why = "it ended without a finish reason (a cut stream, no choices, or not a chat reply)"
        else:
            why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'}"[:300]
        return ProviderError(
            getattr(self, "provider", type(self).__name__), f"the reply could not be read: {why}"
        )

    def _completion(
        self, messages: list[Message], received: Received, parts: list[str], latency_s: float
    ) -> Completion:
        if received.tokens is not None:
            tokens = received.tokens
        elif received.finish == "repetition":  # the stream was left before its usage came: an estimate
            tokens = (sum(estimate_tokens(m["content"]) for m in messages), len(parts), 0)
        else:
            tokens = (0, 0, 0)
        model = received.model or self.model_name
        response_model = self.model_name if received.response_model is None else received.response_model
        return Completion(
            text="".join(parts) if received.text is None else received.text,
            model=model,
            input_tokens=tokens[0],
            output_tokens=tokens[1],
            cached_tokens=tokens[2],
            written_tokens=received.written if received.tokens is not None else 0,
            latency_s=latency_s,
            extra={self.finish_key: received.finish, "response_model": response_model},
            price=self.price(model),
            tool_calls=tuple(received.tool_calls),
        )

    @abc.abstractmethod
    async def _send(
        self,
        messages: list[Message],
        max_tokens: int | None,
        stop: Sequence[str] | None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> Received:
        """Send the request and read the whole reply (with the tool calls it asks for, when
        ``tools`` are offered)."""

    @abc.abstractmethod
    def _stream(
        self, messages: list[Message], max_tokens: int | None, stop: Sequence[str] | None, received: Received
    ) -> AsyncIterator[str]:
        """Send the request streamed: yield the text's deltas as they come, and fill ``received`` (usage,
        finish reason) as the stream tells them. It is closed early when the reply loops."""

    def _error(self, exc: Exception) -> RLMError | None:
        """The :class:`~rlm_kernel.errors.RLMError` that ``exc`` (raised by the SDK) means; None lets
        ``exc`` through as it is."""
        return None

    async def aclose(self) -> None:
        """Release what the client holds; a later call may open it again."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_name!r})"


def _encodable(message: Message) -> Message:
    """The message with lone surrogates (code that printed "\udcff") written as escapes: a request
    must be valid UTF-8."""
    content = message.get("content")
    if isinstance(content, str):
        try:
            content.encode("utf-8")
        except UnicodeEncodeError:
            fixed = content.encode("utf-8", "backslashreplace").decode("utf-8")
            return {**message, "content": fixed}  # type: ignore[typeddict-item]
    return message


class _CallbackFailed(Exception):
    def __init__(self, error: Exception) -> None:
        self.error = error


class RepetitionGuard:
    """Tells when a streamed reply has fallen into a loop: its tail is one piece of text (of 1 to
    ``max_period`` characters) said over and over, at least ``min_chars`` long, or a block of up to
    ``max_lines`` whole lines written ``line_repeats`` times in a row. Small models do this (one
    sentence repeated for minutes, the same four filters written until the token limit), and the
    stream is then better stopped than read."""

    def __init__(
        self,
        *,
        min_chars: int = 320,
        max_period: int = 200,
        repeats: int = 4,
        every: int = 32,
        max_lines: int = 12,
        line_repeats: int = 3,
    ) -> None:
        self.min_chars, self.max_period, self.repeats, self.every = min_chars, max_period, repeats, every
        self.max_lines, self.line_repeats = max_lines, line_repeats
        self._parts: list[str] = []
        self._size = 0
        self._checked = 0

    def feed(self, delta: str) -> bool:
        """Add a piece of the stream; True once the text so far ends in a loop."""
        self._parts.append(delta)
        self._size += len(delta)
        if self._size - self._checked < self.every or self._size < self.min_chars:
            return False
        self._checked = self._size
        text = "".join(self._parts)
        self._parts = [text]
        for period in range(1, self.max_period + 1):
            times = max(self.repeats, -(-self.min_chars // period))
            span = period * times
            if span > len(text):
                break
            if text[-span:] == text[-period:] * times:
                return True
        return repeated_lines(text, self.max_lines, self.line_repeats) > 0


def without_repeats(text: str) -> str:
    """A reply stopped in a loop of whole lines, with the block it repeated written once and the
    half-written line after it dropped: the code it meant, run once."""
    head = text[: text.rfind("\n") + 1]
    if not repeated_lines(head):
        return text
    while period := repeated_lines(head, times=2):
        head = "\n".join(head.split("\n")[:-1][:-period]) + "\n"
    return head


def repeated_lines(text: str, max_lines: int = 12, times: int = 3) -> int:
    """How many whole lines the block that ends ``text``'s whole lines has, where that block (of
    1 to ``max_lines`` lines, 40 characters or more) is written ``times`` times in a row; else 0."""
    # Only the tail can hold the block: a stream is checked every few characters, so the whole
    # reply is not split each time.
    most = max_lines * times
    parts = text.rsplit("\n", most + 1)
    lines = (parts[1:] if len(parts) > most + 1 else parts)[:-1]  # the last line may be half written
    for period in range(1, max_lines + 1):
        if period * times > len(lines):
            break
        block = lines[-period:]
        if sum(len(line.strip()) for line in block) >= 40 and lines[-period * times :] == block * times:
            return period
    return 0


# The sampling of the request being made (a regenerated proposal's), for the backend that builds it.
_SAMPLING: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar(
    "rlm_kernel_sampling", default=None
)


def request_sampling() -> Mapping[str, Any]:
    """The ``temperature`` and ``seed`` asked for the request being built, if any."""
    return _SAMPLING.get() or {}


def now() -> float:
    return time.perf_counter()


@functools.lru_cache(maxsize=1)
def shared_ssl_context() -> ssl.SSLContext:
    """Loading the certificate store costs about 20 ms a client; every client of the process shares one."""
    import httpx2  # what openai 3 and anthropic 2 are built on

    return httpx2.create_ssl_context()
