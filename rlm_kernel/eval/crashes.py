"""Questions about an app's crash reports: an iOS app's crash logs, one text a crash, as a dict of
file name to text (``dev``), or a crash reporting service's export of an Android app's events as a
list of dicts (``test``).

What a notebook holds when someone triages an app's crashes after a release: each crash with the
app's version, the device and its OS, when it happened in the device's own time zone, and the
stack of the thread that crashed, where the app's own frames sit among the system's. Crashes of a
few kinds come back again and again, on several versions, with the line numbers moving between
versions; versions and functions whose names extend another's stand beside each other (``4.2.1``
and ``4.2.10``, ``loadChapter`` and ``loadChapters``), and the thread that crashed is not always
the first. The service's export also holds non-fatal events, and device makers as Android writes
them (``samsung``, ``Google``). Reports are added until the text (or the indented JSON) is about
the length asked for. Kinds of question:

- ``count``: one version's reports of one exception type, or the crashes on one UTC day (``dev``);
  one issue's fatal events on one Android version, or the fatal events on one maker's devices in
  one app version (``test``);
- ``mean``: the average time from launch to crash, in seconds, in one version or on one hardware
  model (``dev``); the average free memory at one issue's fatal events, in MB, or the share of one
  issue's events that were fatal, in percent (``test``);
- ``top``: the app function most often at the top of the app's frames in the crashed thread, or
  the hardware model with the most reports in one version (``dev``); the issue with the most fatal
  events on one UTC day, or the device model with the most fatal events in one app version
  (``test``) (a clear leader);
- ``lookup``: the source file and line of the top app frame in one file's crashed thread, or the
  OS version of one incident (``dev``); the line of one event's blamed frame, or the app version
  one event ran (``test``).

Every answer is computed from the crashes the generator wrote. Score: ``exact``.

Splits: ``dev`` is ``{"crashlogs/Larkspur-2024-05-14-093112.crash": report}``, each report in the
text format the devices write (``Incident Identifier``, ``Hardware Model``, ``Version`` with the
build in parentheses, ``Date/Time`` and ``Launch Time`` with the device's UTC offset,
``OS Version``, ``Exception Type`` with its signal, ``Triggered by Thread``, the threads' frames,
``Binary Images``); ``test`` is the events (``platform``, ``bundle_identifier``, ``event_id``,
``is_fatal``, ``issue_id``, ``issue_title``, ``issue_subtitle``, ``event_timestamp`` as
``2024-06-03 14:22:07.118000 UTC``, ``device``, ``memory`` in bytes, ``operating_system``,
``application``, ``custom_keys``, ``exceptions`` each with its ``frames``, one frame ``blamed``):
other containers, fields, apps and wording.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "mean", "top", "lookup")

_APP = "Larkspur"
_DEV_KINDS = (  # exception type, signal, extra lines, app frame, line, crashed thread, weight
    ("EXC_CRASH", "SIGABRT", "NSInvalidArgumentException", "ReaderViewController.loadChapter(_:)", 218, 0,
     2.0),
    ("EXC_CRASH", "SIGABRT", "NSRangeException", "ReaderViewController.loadChapters(_:)", 241, 0, 1.0),
    ("EXC_BAD_ACCESS", "SIGSEGV", "KERN_INVALID_ADDRESS at 0x0000000000000010",
     "LibraryStore.thumbnail(for:)", 91, 4, 1.6),
    ("EXC_BREAKPOINT", "SIGTRAP", "Swift runtime failure: Index out of range", "ChapterList.subscript.getter",
     44, 0, 1.3),
    ("EXC_BREAKPOINT", "SIGTRAP", "Swift runtime failure: Unexpectedly found nil while unwrapping an "
     "Optional value", "SyncEngine.merge(_:into:)", 305, 6, 1.1),
    ("EXC_CRASH", "SIGKILL", "FRONTBOARD 2343432205", "DatabaseMigrator.run()", 77, 0, 0.7),
    ("EXC_BAD_ACCESS", "SIGBUS", "KERN_PROTECTION_FAILURE at 0x000000016b3a7ff8", "ImageDecoder.decode(_:)",
     129, 3, 0.8),
    ("EXC_BAD_ACCESS", "SIGSEGV", "KERN_INVALID_ADDRESS at 0x0000000000000028",
     "AudioPlayer.observeValue(forKeyPath:of:change:context:)", 58, 0, 0.6),
)  # fmt: skip
_DEV_VERSIONS = (("4.1.3", 777), ("4.2.0", 801), ("4.2.1", 812), ("4.2.10", 846), ("4.3.0", 870))
_DEV_OS = (
    ("16.7.8", "20H343"),
    ("17.3.1", "21D61"),
    ("17.4.1", "21E236"),
    ("17.5", "21F79"),
    ("17.5.1", "21F90"),
    ("18.0", "22A3354"),
)
_DEV_MODELS = (
    "iPhone12,1",
    "iPhone13,2",
    "iPhone14,5",
    "iPhone14,7",
    "iPhone15,2",
    "iPhone15,4",
    "iPhone16,1",
    "iPad13,18",
)
_OFFSETS = (120, 120, 60, -240, -240, -420, -300, 330, 540, 600, 0)  # minutes from UTC

_PACKAGE = "app.pantry.android"
_TEST_KINDS = (  # exception type, message, blamed symbol, file, line, weight, how often fatal
    ("java.lang.NullPointerException",
     "Attempt to invoke virtual method 'java.lang.String app.pantry.model.Basket.getId()' on a null object "
     "reference", "app.pantry.checkout.CheckoutViewModel.submitOrder", "CheckoutViewModel.kt", 142, 2.0,
     0.96),
    ("java.lang.IllegalArgumentException",
     "Parameter specified as non-null is null: method app.pantry.checkout.CheckoutViewModel.submitOrders, "
     "parameter items", "app.pantry.checkout.CheckoutViewModel.submitOrders", "CheckoutViewModel.kt", 171,
     1.0, 0.9),
    ("java.lang.IllegalStateException", "Fragment CartFragment{5d1c2a0} not attached to a context.",
     "app.pantry.cart.CartFragment.onPriceUpdated", "CartFragment.kt", 88, 1.5, 0.8),
    ("java.lang.IndexOutOfBoundsException", "Index: 3, Size: 3",
     "app.pantry.search.SearchAdapter.onBindViewHolder", "SearchAdapter.kt", 61, 1.2, 0.95),
    ("android.database.sqlite.SQLiteDatabaseLockedException", "database is locked (code 5 SQLITE_BUSY)",
     "app.pantry.data.OrderDao_Impl.insert", "OrderDao_Impl.java", 214, 0.9, 0.55),
    ("java.lang.OutOfMemoryError", "Failed to allocate a 12582928 byte allocation with 4194304 free bytes",
     "app.pantry.images.ProductImageLoader.decode", "ProductImageLoader.kt", 39, 0.8, 0.97),
    ("java.net.SocketTimeoutException", "timeout", "app.pantry.net.ApiClient.execute", "ApiClient.kt", 203,
     1.4, 0.15),
    ("android.app.RemoteServiceException$ForegroundServiceDidNotStartInTimeException",
     "Context.startForegroundService() did not then call Service.startForeground()",
     "app.pantry.delivery.TrackingService.onCreate", "TrackingService.kt", 27, 0.7, 0.93),
)  # fmt: skip
_TEST_VERSIONS = (("5.11.2", 5112), ("5.12.0", 5120), ("5.12.1", 5121), ("5.13.0", 5130))
_TEST_DEVICES = (  # manufacturer as Android gives it, model, brand
    ("samsung", "SM-S918B", "samsung"),
    ("samsung", "SM-A546B", "samsung"),
    ("samsung", "SM-G991B", "samsung"),
    ("Google", "Pixel 7a", "google"),
    ("Google", "Pixel 8 Pro", "google"),
    ("Xiaomi", "2201117TG", "Redmi"),
    ("OnePlus", "CPH2449", "OnePlus"),
    ("motorola", "moto g84 5G", "motorola"),
    ("OPPO", "CPH2565", "OPPO"),
)
_ANDROID = (("12", 31), ("13", 33), ("14", 34), ("15", 35))
_SCREENS = ("checkout", "cart", "search", "product", "orders", "tracking", "home")


@dataclass
class Crash:
    kind: int
    version: int
    when: datetime  # UTC
    uptime: float  # seconds from launch
    os: int
    model: int
    offset: int = 0  # dev: the device's minutes from UTC
    fatal: bool = True
    ident: str = ""
    file: str = ""
    free: int = 0  # test: bytes of free memory
    used: int = 0
    frames: list[tuple[str, str, int]] = field(default_factory=list)  # test: symbol, file, line


def _source(symbol: str) -> str:
    """The Swift file an app function is in: its type's name."""
    return symbol.removeprefix("closure #2 in ").split(".")[0] + ".swift"


def _line(split: str, c: Crash) -> int:
    """The source line of a crash's app frame: the kind's line, moved by the later versions."""
    base = (_DEV_KINDS if split == "dev" else _TEST_KINDS)[c.kind][4]
    return base + (0, 0, 3, 3, 9)[c.version] if split == "dev" else base + (0, 2, 2, 5)[c.version]


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032X}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _crashes(split: str, seed: str, n: int) -> list[Crash]:
    rng = random.Random(f"{seed}/{n}")
    dev = split == "dev"
    kinds = _DEV_KINDS if dev else _TEST_KINDS
    weight = [k[6 if dev else 5] * rng.uniform(0.5, 1.6) for k in kinds]
    versions = _DEV_VERSIONS if dev else _TEST_VERSIONS
    oses = _DEV_OS if dev else _ANDROID
    models = _DEV_MODELS if dev else _TEST_DEVICES
    model_weight = [rng.uniform(0.3, 2.0) for _ in models]
    start = datetime(2024, 5, 9, 6) if dev else datetime(2024, 6, 1, 0)
    span = (2 + n // 8) * 86400.0  # more crashes over more days
    out = []
    for _ in range(n):
        when = start + timedelta(seconds=rng.uniform(0, span))
        # a version is used more as it gets older (the newest only from the middle on)
        progress = (when - start).total_seconds() / span
        v = rng.choices(
            range(len(versions)), [1.0, 1.2, 1.5, 1.0 + 2 * progress, 3 * progress][: len(versions)]
        )[0]
        c = Crash(
            kind=rng.choices(range(len(kinds)), weight)[0],
            version=v,
            when=when.replace(microsecond=rng.randrange(0, 10_000) * 100),
            uptime=round(rng.choice((rng.uniform(0.4, 8), rng.uniform(8, 600), rng.uniform(60, 5400))), 4),
            os=rng.choices(range(len(oses)), [1, 2, 3, 3, 2, 1][: len(oses)])[0],
            model=rng.choices(range(len(models)), model_weight)[0],
        )
        if dev:
            c.offset = rng.choice(_OFFSETS)
        else:
            c.fatal = rng.random() < _TEST_KINDS[c.kind][6]
            total = rng.choice((4, 6, 8, 8, 12)) * 1024**3
            c.free = rng.randrange(60_000_000, 1_400_000_000)
            c.used = total - c.free - rng.randrange(500_000_000, 1_500_000_000)
        out.append(c)
    out.sort(key=lambda c: c.when)
    for c in out:
        c.ident = _uuid(rng) if dev else f"{rng.getrandbits(128):032x}"
    if dev:
        seen: set[str] = set()
        for c in out:
            local = c.when + timedelta(minutes=c.offset)
            name = f"crashlogs/{_APP}-{local:%Y-%m-%d-%H%M%S}.crash"
            while name in seen:  # two crashes in one second: the later one numbered, as the device does
                name = name.replace(".crash", "-1.crash") if not name.endswith("-1.crash") else name + ".1"
            seen.add(name)
            c.file = name
    return out


# -- the dev reports ----------------------------------------------------------------------------


def _stamp(t: datetime, offset: int) -> str:
    local = t + timedelta(minutes=offset)
    sign = "+" if offset >= 0 else "-"
    zone = f"{sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
    return f"{local:%Y-%m-%d %H:%M:%S}.{local.microsecond // 100:04d} {zone}"


def _frame(k: int, image: str, address: int, symbol: str) -> str:
    return f"{k:<4}{image:<30}\t0x{address:016x} {symbol}"


_SYSTEM = {
    "SIGABRT": [
        ("libsystem_kernel.dylib", "__pthread_kill + 8"),
        ("libsystem_pthread.dylib", "pthread_kill + 268"),
        ("libsystem_c.dylib", "abort + 180"),
        ("libobjc.A.dylib", "_objc_terminate() + 144"),
        ("CoreFoundation", "-[NSArray objectAtIndexedSubscript:] + 96"),
    ],
    "SIGSEGV": [("libobjc.A.dylib", "objc_msgSend + 32")],
    "SIGBUS": [
        ("libswiftCore.dylib", "swift_retain + 60"),
        ("ImageIO", "CGImageSourceCreateImageAtIndex + 112"),
    ],
    "SIGTRAP": [("libswiftCore.dylib", "_assertionFailure(_:_:file:line:flags:) + 264")],
    "SIGKILL": [
        ("libsystem_kernel.dylib", "mach_msg2_trap + 8"),
        ("libsqlite3.dylib", "sqlite3_step + 1112"),
    ],
}
_TAIL = [
    ("UIKitCore", "-[UIApplication sendAction:to:from:forEvent:] + 100"),
    ("CoreFoundation", "__CFRunLoopRun + 1996"),
    ("GraphicsServices", "GSEventRunModal + 164"),
    ("UIKitCore", "UIApplicationMain + 340"),
    (_APP, "main + 64 (AppDelegate.swift:14)"),
    ("dyld", "start + 2240"),
]
_QUEUE = [
    ("libdispatch.dylib", "_dispatch_client_callout + 20"),
    ("libdispatch.dylib", "_dispatch_root_queue_drain + 684"),
    ("libsystem_pthread.dylib", "_pthread_wqthread + 288"),
    ("libsystem_pthread.dylib", "start_wqthread + 8"),
]
_HELPERS = (  # app functions that stand in the stack below the one that crashed
    "LibraryViewModel.refresh() + 228 (LibraryViewModel.swift:63)",
    "ReaderCoordinator.open(book:) + 540 (ReaderCoordinator.swift:112)",
    "SyncEngine.run() + 96 (SyncEngine.swift:188)",
    "closure #2 in LibraryStore.prefetch(_:) + 180 (LibraryStore.swift:140)",
)


def _report(c: Crash, rng: random.Random) -> str:
    etype, signal, extra, symbol, _, thread, _ = _DEV_KINDS[c.kind]
    source = _source(symbol)
    version, build = _DEV_VERSIONS[c.version]
    os_version, os_build = _DEV_OS[c.os]
    base = 0x100A00000 + rng.randrange(0, 0x400) * 0x4000
    lines = [
        f"Incident Identifier: {c.ident}",
        f"CrashReporter Key:   {rng.getrandbits(160):040x}",
        f"Hardware Model:      {_DEV_MODELS[c.model]}",
        f"Process:             {_APP} [{rng.randrange(300, 9000)}]",
        f"Path:                /private/var/containers/Bundle/Application/{_uuid(rng)}/{_APP}.app/{_APP}",
        "Identifier:          com.larkspur.reader",
        f"Version:             {version} ({build})",
        "AppStoreTools:       15E204",
        "Code Type:           ARM-64 (Native)",
        "Role:                Foreground",
        "Parent Process:      launchd [1]",
        "",
        f"Date/Time:           {_stamp(c.when, c.offset)}",
        f"Launch Time:         {_stamp(c.when - timedelta(seconds=c.uptime), c.offset)}",
        f"OS Version:          iPhone OS {os_version} ({os_build})",
        "Release Type:        User",
        "Report Version:      104",
        "",
        f"Exception Type:  {etype} ({signal})",
    ]
    if etype == "EXC_BAD_ACCESS":
        lines += [
            f"Exception Subtype: {extra}",
            f"Exception Codes: 0x0000000000000001, 0x{int(extra[-18:], 16):016x}",
        ]
    else:
        lines.append("Exception Codes: 0x0000000000000000, 0x0000000000000000")
    if signal == "SIGKILL":
        lines.append(f"Termination Reason: {extra} <RBSTerminateContext| domain:10 code:0x8BADF00D>")
    elif signal == "SIGTRAP":
        lines.append(f"Termination Reason: SIGNAL 5 Trace/BPT trap: 5\n{extra}")
    elif signal == "SIGABRT":
        lines += [
            "Termination Reason: SIGNAL 6 Abort trap: 6",
            f"Application Specific Information: *** Terminating app due to uncaught exception '{extra}'",
        ]
    else:
        lines.append(f"Termination Reason: SIGNAL {11 if signal == 'SIGSEGV' else 10} {signal}")
    lines += [f"Triggered by Thread:  {thread}", ""]
    app_line = f"{symbol} + {rng.randrange(40, 900)} ({source}:{_line('dev', c)})"
    lines += _threads(thread, signal, app_line, base, rng)
    lines += [
        "Binary Images:",
        f"       0x{base:x} -        0x{base + 0x2FFFFF:x} {_APP} arm64  <{rng.getrandbits(128):032x}> "
        f"/private/var/containers/Bundle/Application/.../{_APP}.app/{_APP}",
        "       0x1b0a3c000 -        0x1b0a75fff libsystem_kernel.dylib arm64e  <b3a1f0c2d4e5> "
        "/usr/lib/system/libsystem_kernel.dylib",
        "",
        "EOF",
    ]
    return "\n".join(lines) + "\n"


def _threads(thread: int, signal: str, app_line: str, base: int, rng: random.Random) -> list[str]:
    """The crashed thread and one or two others, each with its frames."""
    lines = []
    for t in sorted({0, thread, rng.choice((1, 2, 5, 7))}):
        crashed = t == thread
        queue = (
            "com.apple.main-thread" if t == 0 else f"com.apple.root.{rng.choice(('utility', 'default'))}-qos"
        )
        lines += [
            f"Thread {t} name:   Dispatch queue: {queue}",
            f"Thread {t}{' Crashed' if crashed else ''}:",
        ]
        if crashed:
            stack = [*_SYSTEM[signal], (_APP, app_line), (_APP, rng.choice(_HELPERS))]
            stack += _TAIL if t == 0 else _QUEUE
        elif t == 0:
            stack = [("libsystem_kernel.dylib", "mach_msg2_trap + 8"), *_TAIL[1:]]
        else:
            stack = [("libsystem_kernel.dylib", "__psynch_cvwait + 8")]
            if rng.random() < 0.5:  # the app's own frames on a thread that did not crash
                stack.append((_APP, rng.choice(_HELPERS)))
            stack += _QUEUE
        for k, (image, text) in enumerate(stack):
            address = (base if image == _APP else 0x1A0000000) + rng.randrange(0x1000, 0xFFFFFF)
            lines.append(_frame(k, image, address, text))
        lines.append("")
    return lines


def _files(crashes: list[Crash], seed: str) -> dict[str, str]:
    rng = random.Random(seed)
    return {c.file: _report(c, rng) for c in crashes}


# -- the test events ----------------------------------------------------------------------------


def _event(c: Crash, rng: random.Random) -> dict:
    etype, message, symbol, source, _, _, _ = _TEST_KINDS[c.kind]
    maker, model, brand = _TEST_DEVICES[c.model]
    android, api = _ANDROID[c.os]
    version, build = _TEST_VERSIONS[c.version]
    line = _line("test", c)
    blamed = {
        "line": line,
        "file": source,
        "symbol": symbol,
        "owner": "DEVELOPER",
        "blamed": True,
    }
    platform = {"owner": "PLATFORM", "blamed": False}
    frames = []
    if "Index" in etype:  # thrown inside the platform, below the app's frame
        frames.append(
            {"line": 437, "file": "ArrayList.java", "symbol": "java.util.ArrayList.get", **platform}
        )
    elif "sqlite" in etype:
        frames.append(
            {
                "line": -2,
                "file": "SQLiteConnection.java",
                "symbol": "android.database.sqlite.SQLiteConnection.nativeExecuteForLastInsertedRowId",
                **platform,
            }
        )
    frames.append(blamed)
    if rng.random() < 0.5:  # the app's own caller, not blamed
        frames.append(
            {
                **blamed,
                "symbol": f"{symbol}$1.invokeSuspend",
                "line": line + rng.randrange(8, 40),
                "blamed": False,
            }
        )
    frames.append(
        {
            "line": rng.randrange(60, 400),
            "file": "ContinuationImpl.kt" if source.endswith(".kt") else "Handler.java",
            "symbol": "kotlin.coroutines.jvm.internal.BaseContinuationImpl.resumeWith"
            if source.endswith(".kt")
            else "android.os.Handler.dispatchMessage",
            **platform,
        }
    )
    frames.append(
        {
            "line": 8536 if rng.random() < 0.5 else 8465,
            "file": "ActivityThread.java",
            "symbol": "android.app.ActivityThread.main",
            **platform,
        }
    )
    exceptions = [
        {
            "type": etype,
            "exception_message": message,
            "nested": False,
            "blamed": True,
            "frames": frames,
        }
    ]
    if rng.random() < 0.3:  # thrown again on another thread
        exceptions.insert(
            0,
            {
                "type": "java.lang.RuntimeException",
                "exception_message": "Unable to start activity "
                f"ComponentInfo{{{_PACKAGE}/app.pantry.MainActivity}}",
                "nested": False,
                "blamed": False,
                "frames": [
                    {
                        "line": 3645,
                        "file": "ActivityThread.java",
                        "symbol": "android.app.ActivityThread.performLaunchActivity",
                        **platform,
                    }
                ],
            },
        )
        exceptions[1]["nested"] = True
    issue = f"{(c.kind * 2654435761 + 977) % 16**8:08x}{'c0ffee' if c.fatal else 'beef00'}{c.kind:02x}"
    issue += "a91d3e5f7b2c4d6e"
    return {
        "platform": "ANDROID",
        "bundle_identifier": _PACKAGE,
        "event_id": c.ident,
        "is_fatal": c.fatal,
        "issue_id": issue[:32],
        "issue_title": symbol,
        "issue_subtitle": f"{etype} - {message}",
        "event_timestamp": f"{c.when:%Y-%m-%d %H:%M:%S}.{c.when.microsecond:06d} UTC",
        "device": {"manufacturer": maker, "model": model, "architecture": "arm64-v8a", "brand": brand},
        "memory": {"used": c.used, "free": c.free},
        "operating_system": {
            "display_version": android,
            "name": "Android",
            "type": f"API {api}",
            "device_type": "MOBILE",
        },
        "application": {"build_version": str(build), "display_version": version},
        "user": {
            "name": None,
            "email": None,
            "id": f"u{rng.getrandbits(40):010x}" if rng.random() < 0.7 else None,
        },
        "installation_uuid": f"{rng.getrandbits(128):032x}",
        "app_orientation": rng.choice(("PORTRAIT", "PORTRAIT", "PORTRAIT", "LANDSCAPE")),
        "process_state": "FOREGROUND" if c.fatal or rng.random() < 0.5 else "BACKGROUND",
        "custom_keys": [
            {"key": "screen", "value": rng.choice(_SCREENS)},
            {"key": "basket_items", "value": str(rng.randrange(0, 30))},
        ],
        "exceptions": exceptions,
    }


def _events(crashes: list[Crash], seed: str) -> list[dict]:
    rng = random.Random(seed)
    return [_event(c, rng) for c in crashes]


def _fit(split: str, seed: str, chars: int) -> tuple[list[Crash], object]:
    per = 2300 if split == "dev" else 1700
    n = max(3, chars // per)
    for _ in range(6):
        crashes = _crashes(split, seed, n)
        context = _files(crashes, seed) if split == "dev" else _events(crashes, seed)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(3, round(n * chars / size))
    return crashes, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _ask_count(split: str, rng: random.Random, crashes: list[Crash]) -> _Asked:
    c = rng.choice(crashes)
    if split == "dev":
        version = _DEV_VERSIONS[c.version][0]
        if rng.random() < 0.5:
            etype = _DEV_KINDS[c.kind][0]
            n = sum(x.version == c.version and _DEV_KINDS[x.kind][0] == etype for x in crashes)
            q = f"How many crash reports of version {version} have the exception type {etype}?"
            return q, n, {"version": version, "exception": etype}
        day = f"{c.when:%Y-%m-%d}"
        n = sum(f"{x.when:%Y-%m-%d}" == day for x in crashes)
        return f"How many crashes happened on {day}, in UTC?", n, {"day": day}
    fatal = [x for x in crashes if x.fatal]
    if not fatal:
        return None
    c = rng.choice(fatal)
    title = _TEST_KINDS[c.kind][2]
    if rng.random() < 0.5:
        android = _ANDROID[c.os][0]
        n = sum(x.kind == c.kind and x.os == c.os for x in fatal)
        q = f"Count the fatal events with issue_title {title} on devices running Android {android}."
        return q, n, {"issue": title, "android": android}
    maker, version = _TEST_DEVICES[c.model][0], _TEST_VERSIONS[c.version][0]
    n = sum(_TEST_DEVICES[x.model][0] == maker and x.version == c.version for x in fatal)
    q = f"Count the fatal events from {maker} devices (device.manufacturer) in app version {version}."
    return q, n, {"manufacturer": maker, "version": version}


def _ask_mean(split: str, rng: random.Random, crashes: list[Crash]) -> _Asked:
    c = rng.choice(crashes)
    if split == "dev":
        if rng.random() < 0.5:
            version = _DEV_VERSIONS[c.version][0]
            mine = [x.uptime for x in crashes if x.version == c.version]
            q = (
                f"On average, how many seconds after launch did version {version} crash "
                "(Date/Time minus Launch Time)? One decimal."
            )
            return q, round(sum(mine) / len(mine), 1), {"version": version}
        model = _DEV_MODELS[c.model]
        mine = [x.uptime for x in crashes if x.model == c.model]
        q = f"What is the mean time from launch to crash, in seconds (one decimal), on {model} devices?"
        return q, round(sum(mine) / len(mine), 1), {"model": model}
    title = _TEST_KINDS[c.kind][2]
    mine = [x for x in crashes if x.kind == c.kind]
    if rng.random() < 0.5:
        fatal = [x.free for x in mine if x.fatal]
        if not fatal:
            return None
        q = (
            f"Averaged over the fatal events of issue_title {title}, how much memory was free, in MB "
            "(1 MB = 1,000,000 bytes), one decimal?"
        )
        return q, round(sum(fatal) / len(fatal) / 1e6, 1), {"issue": title}
    share = 100 * sum(x.fatal for x in mine) / len(mine)
    q = f"What percentage of the events of issue_title {title} are fatal? One decimal."
    return q, round(share, 1), {"issue": title}


def _ask_top(split: str, rng: random.Random, crashes: list[Crash]) -> _Asked:
    c = rng.choice(crashes)
    if split == "dev":
        if rng.random() < 0.5:
            top = _leader(Counter(_DEV_KINDS[x.kind][3] for x in crashes))
            q = (
                f"Which {_APP} function is most often the topmost {_APP} frame of the crashed thread? "
                "Give it as the report writes it."
            )
            return None if top is None else (q, top, {"by": "function"})
        version = _DEV_VERSIONS[c.version][0]
        top = _leader(Counter(_DEV_MODELS[x.model] for x in crashes if x.version == c.version))
        q = f"Which Hardware Model sent the most crash reports of version {version}?"
        return None if top is None else (q, top, {"version": version})
    fatal = [x for x in crashes if x.fatal]
    if rng.random() < 0.5:
        day = f"{c.when:%Y-%m-%d}"
        top = _leader(Counter(_TEST_KINDS[x.kind][2] for x in fatal if f"{x.when:%Y-%m-%d}" == day))
        q = f"Which issue_title has the most fatal events with an event_timestamp on {day}?"
        return None if top is None else (q, top, {"day": day})
    version = _TEST_VERSIONS[c.version][0]
    top = _leader(Counter(_TEST_DEVICES[x.model][1] for x in fatal if x.version == c.version))
    q = f"Which device model has the most fatal events in app version {version}?"
    return None if top is None else (q, top, {"version": version})


def _ask_lookup(split: str, rng: random.Random, crashes: list[Crash]) -> _Asked:
    """Always a question."""
    c = rng.choice(crashes)
    if split == "dev":
        if rng.random() < 0.5:
            q = (
                f"In {c.file}, which source file and line does the topmost {_APP} frame of the crashed "
                "thread point to (as File.swift:123)?"
            )
            return q, f"{_source(_DEV_KINDS[c.kind][3])}:{_line('dev', c)}", {"file": c.file}
        q = f"What OS Version (only the number, such as 16.1.2) does the report {c.ident} give?"
        return q, _DEV_OS[c.os][0], {"incident": c.ident}
    if rng.random() < 0.5:
        q = f"Which line number does the blamed frame of event_id {c.ident} give?"
        return q, _line("test", c), {"event_id": c.ident}
    q = f"What application display_version was running when event_id {c.ident} was recorded?"
    return q, _TEST_VERSIONS[c.version][0], {"event_id": c.ident}


_ASK = {"count": _ask_count, "mean": _ask_mean, "top": _ask_top, "lookup": _ask_lookup}


@family(
    "crashes",
    "an app's crash reports: iOS crash logs as a dict of file name to text (dev), or a crash reporting "
    "service's Android events as a list of dicts (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    crashes, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, crashes), kind, "lookup", nonzero=True, hidden=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="dict of file name to text (crash logs)"
        if ref.split == "dev"
        else "list of dicts (crash events)",
        reports=len(crashes),
    )
