"""Images in sub-calls: through the real OpenAI and Anthropic SDKs over HTTP to the scripted server,
whose recorded request bodies show the images in each provider's format."""

from __future__ import annotations

import base64
import io
import json
import re
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Request, Script, ScriptedServer

from rlm_kernel import RLM
from rlm_kernel.images import describe_images, load_images, peek
from rlm_kernel.jupyter.render import render_run
from rlm_kernel.prompts import context_metadata, describe_context
from rlm_kernel.view import RunState

PIL: Any
try:
    import PIL.Image as PIL  # noqa: N814 - one name for the module, or None without Pillow
except ImportError:  # the images are written by hand; the tests that draw in the REPL are skipped
    PIL = None
needs_pil = pytest.mark.skipif(PIL is None, reason="Pillow is not installed")

KEY = "sk-test-images"
# Larger than the record's thumbnail (96 px), so that a thumbnail is never the image's own bytes.
SIZES = {"a.png": (200, 150), "b.png": (120, 90), "c.jpg": (300, 100)}


def image_bytes(width: int, height: int, fmt: str = "PNG", colour: str = "red") -> bytes:
    if PIL is not None:
        buffer = io.BytesIO()
        PIL.new("RGB", (width, height), colour).save(buffer, format=fmt)
        return buffer.getvalue()
    if fmt == "JPEG":  # a header of one frame is all the sniffing reads
        frame = b"\x08" + struct.pack(">HH", height, width) + b"\x01\x01\x11\x00"
        return b"\xff\xd8\xff\xc0" + struct.pack(">H", len(frame) + 2) + frame + b"\xff\xd9"

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    images = tmp_path / "images"
    images.mkdir()
    for name, (w, h) in SIZES.items():
        (images / name).write_bytes(image_bytes(w, h, "JPEG" if name.endswith(".jpg") else "PNG"))
    (images / "notes.txt").write_text("not an image")
    return images


def make_rlm(server: ScriptedServer, sub: str = "openai", sub_model: str | None = None, **kw: Any) -> RLM:
    """A root on OpenAI's wire; sub-calls to ``sub``'s, by default to a vision model."""
    if sub == "openai":
        sub_kwargs = {"model_name": sub_model or "gpt-4o-mini", "base_url": server.openai_base_url}
    else:
        sub_kwargs = {"model_name": sub_model or "claude-haiku-4-5", "base_url": server.anthropic_base_url}
    sub_kwargs.update(kw.pop("sub_extra", {}))
    kw.setdefault("log_dir", False)
    return RLM(
        "openai",
        {"model_name": "gpt-4o-mini", "base_url": server.openai_base_url, "api_key": KEY, "max_retries": 0},
        sub_backend=sub,
        sub_backend_kwargs={**sub_kwargs, "api_key": KEY, "max_retries": 0},
        **kw,
    )


def repl(code: str) -> str:
    return f"```repl\n{code}\n```"


def subs(server: ScriptedServer) -> list[Request]:
    return [r for r in server.requests if not r.is_root]


def openai_images(request: Request) -> list[bytes]:
    """The images of an OpenAI request's last message, checked to be ``image_url`` data URLs."""
    content = request.body["messages"][-1]["content"]
    assert isinstance(content, list) and content[0]["type"] == "text"
    found = []
    for part in content[1:]:
        assert part["type"] == "image_url"
        media, data = re.fullmatch(r"data:(image/\w+);base64,(.+)", part["image_url"]["url"]).groups()
        raw = base64.b64decode(data)
        assert peek(raw)[0] == media
        found.append(raw)
    return found


def test_openai_request_carries_images_and_the_root_sees_no_bytes(scripted_server, folder, tmp_path):
    scripted_server.responder = Script(
        root=[
            repl('r = llm_query("What colour?", images=sorted(context.iterdir())[:2])\nprint(r)'),
            repl("FINAL(r)"),
        ],
        sub="red",
    )
    result = make_rlm(scripted_server, log_dir=tmp_path).completion(folder, root_prompt="Colours?")
    assert result.response == "red", result.error
    (sub,) = subs(scripted_server)
    sent = openai_images(sub)
    assert sent == [(folder / "a.png").read_bytes(), (folder / "b.png").read_bytes()]
    assert sub.body["messages"][-1]["content"][0]["text"] == "What colour?"

    # The root's first request describes the folder by count, formats and sizes; no image's bytes.
    first = next(r for r in scripted_server.requests if r.is_root)
    assert "Images: 3 (2 PNG, 1 JPEG" in first.text and "200x150, 120x90, 300x100" in first.text
    every = json.dumps([r.body for r in scripted_server.requests if r.is_root])
    for name in SIZES:
        assert base64.b64encode((folder / name).read_bytes()).decode()[:60] not in every

    # The record keeps each image's size and a thumbnail of at most 96 px, never the image.
    text = result.log_path.read_text()
    for name in SIZES:
        assert base64.b64encode((folder / name).read_bytes()).decode()[:60] not in text
    (started,) = [e for e in result.trajectory if e.kind == "subcall_started"]
    assert [(i["media_type"], i["width"], i["height"]) for i in started.images] == [
        ("image/png", 200, 150),
        ("image/png", 120, 90),
    ]
    assert [i["bytes"] for i in started.images] == [len(sent[0]), len(sent[1])]
    for image in started.images:
        if PIL is None:
            assert "thumbnail" not in image
            continue
        thumb = PIL.open(io.BytesIO(base64.b64decode(image["thumbnail"].split(",", 1)[1])))
        assert max(thumb.size) <= 96

    state = RunState()
    for event in result.trajectory:
        state.apply(event)
    html = render_run(state)
    assert "2 image(s)" in html
    if PIL is not None:
        assert html.count('<img src="data:image/png;base64,') == 2
    else:
        assert "[PNG 200×150" in html


@needs_pil
def test_anthropic_batch_sends_each_prompt_its_own_images(scripted_server):
    png = image_bytes(150, 100, colour="blue")
    scripted_server.responder = Script(
        root=[
            repl(
                "from PIL import Image\n"
                "drawn = Image.new('RGB', (130, 110), 'green')\n"
                'rs = llm_query_batched(["first", "second", "third"], images=[context, [drawn, context], None])\n'
                "print(rs)"
            ),
            repl("FINAL(rs)"),
        ],
        sub="ok",
    )
    result = make_rlm(scripted_server, sub="anthropic").completion(png, root_prompt="q")
    assert result.error is None, result.error
    by_text: dict[str, list[dict]] = {}
    for request in subs(scripted_server):
        (turn,) = request.body["messages"]
        content = turn["content"]
        if isinstance(content, str):  # no images: the plain string, as before
            by_text[content] = []
            continue
        assert content[0]["type"] == "text"
        by_text[content[0]["text"]] = content[1:]
    assert by_text["third"] == []
    (only,) = by_text["first"]
    assert only == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(png).decode()},
    }
    drawn, again = by_text["second"]
    assert drawn["source"]["media_type"] == "image/png"
    assert peek(base64.b64decode(drawn["source"]["data"])) == ("image/png", 130, 110)
    assert base64.b64decode(again["source"]["data"]) == png
    # The root was told of one image, by its size, and never its bytes.
    first = next(r for r in scripted_server.requests if r.is_root)
    assert "Images: 1 (1 PNG" in first.text and "150x100" in first.text


def test_a_model_without_vision_refuses_before_any_request(scripted_server, folder):
    scripted_server.responder = Script(
        root=[
            repl(
                "try:\n"
                '    llm_query("look", images=context)\n'
                "except ValueError as e:\n"
                '    print("REFUSED", e)'
            ),
            repl('FINAL("done")'),
        ],
        sub="should not be asked",
    )
    result = make_rlm(scripted_server, sub_model="scripted-model").completion(folder, root_prompt="q")
    assert result.response == "done", result.error
    assert subs(scripted_server) == []
    output = next(e for e in result.trajectory if e.kind == "step_finished").output
    (line,) = [x for x in output.splitlines() if x.startswith("REFUSED")]
    assert "scripted-model does not take images" in line and "'vision': True" in line


def test_vision_true_lets_an_unknown_model_take_images(scripted_server, folder):
    scripted_server.responder = Script(
        root=[repl('r = llm_query("look", images=context)'), repl("FINAL(r)")], sub="seen"
    )
    rlm = make_rlm(scripted_server, sub_model="my-llava", sub_extra={"vision": True})
    assert rlm.completion(folder, root_prompt="q").response == "seen"
    (sub,) = subs(scripted_server)
    assert len(openai_images(sub)) == 3


def test_describing_a_folder_reads_headers_only(folder):
    meta = context_metadata(folder)
    assert meta["images"] == {
        "count": 3,
        "formats": {"PNG": 2, "JPEG": 1},
        "sizes": ["200x150", "120x90", "300x100"],
        "bytes": sum((folder / n).stat().st_size for n in SIZES),
    }
    text = describe_context(meta)
    assert "Images: 3" in text and "\\x89PNG" not in text
    assert describe_context(context_metadata([(folder / "a.png").read_bytes()])).count("200x150") == 1
    assert describe_images("a plain string") is None and describe_images(["text", "more"]) is None
    assert [i.media_type for i in load_images(folder)] == ["image/png", "image/png", "image/jpeg"]
    with pytest.raises(ValueError, match="not a PNG, JPEG, GIF or WebP"):
        load_images(b"plain bytes")


@needs_pil
def test_kernel_executor_sends_images_across_the_bridge(scripted_server, folder):
    png = (folder / "a.png").read_bytes()
    scripted_server.responder = Script(
        root=[
            repl(
                "from PIL import Image\n"
                "drawn = Image.new('RGB', (140, 120), 'blue')\n"
                'r = llm_query("look", images=[context, drawn])\n'
                'rs = llm_query_batched(["x", "y"], images=[[context], None])\n'
                "try:\n"
                '    llm_query("no", images=context, model="scripted-model")\n'
                "except ValueError as e:\n"
                '    print("REFUSED", e)\n'
                "print(r, rs)"
            ),
            repl("FINAL(r)"),
        ],
        sub="seen",
    )
    rlm = make_rlm(
        scripted_server,
        executor="kernel",
        executor_kwargs={"isolation": "none"},
        sub_models=["scripted-model"],  # a model the code may name, which takes no images
    )
    result = rlm.completion(png, root_prompt="q")
    assert result.response == "seen", result.error
    output = next(e for e in result.trajectory if e.kind == "step_finished").output
    assert "REFUSED scripted-model does not take images" in output
    sent = {r.last_user: r for r in subs(scripted_server)}
    assert set(sent) == {"look", "x", "y"}  # the refused call never left
    first, drawn = openai_images(sent["look"])
    assert first == png and peek(drawn) == ("image/png", 140, 120)
    assert openai_images(sent["x"]) == [png]
    assert isinstance(sent["y"].body["messages"][-1]["content"], str)
    started = [e for e in result.trajectory if e.kind == "subcall_started"]
    assert sorted(len(e.images) for e in started) == [0, 1, 2]
