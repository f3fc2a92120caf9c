"""Drives TypeSafe's official Python client (typesafe-sdk, unmodified) against a server.

Configured as a user configures it: TYPESAFE_BASE_URL and TYPESAFE_API_KEY in the environment.
Usage: sdk_driver.py SCENARIO...; prints one JSON object per scenario, {"scenario": NAME, ...},
holding what the client returned or raised. test/integration/python-sdk.test.ts asserts on it.
Only the client's public API is used; an httpx2.Client with event hooks (the client's documented
`http_client` option) records what went over the wire, which the client's own types hide.
"""

import base64
import json
import re
import struct
import sys
import threading
import time
import traceback
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
from typesafe_sdk import (
    Box,
    Choice,
    Image,
    ListModelsResponse,
    Noul,
    RetryPolicy,
    Score,
    SystemOneResponse,
    TypeSafeAPIError,
    TypeSafeClient,
    TypeSafeError,
    TypeSafeRateLimitError,
)

# Decisions run on two shared cores in CI, so a slow answer is not a failure.
TIMEOUT = 120.0
# A failure must reach the test as the server sent it, not after the client's retries.
NO_RETRY = RetryPolicy(max_retries=0)
STATE = "I was charged twice for my subscription this month. Please refund one of the payments as soon as possible."
IMAGES_ON = {"TypeSafe-Danger-Zone-Images": "true"}
PART_NAME = re.compile(rb'Content-Disposition: form-data; name="([^"]+)"')


def tiny_png() -> bytes:
    """A real 1x1 red PNG: signature, IHDR, one zlib-compressed scanline, IEND."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    scanline = b"\x00\xff\x00\x00"
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(scanline)) + chunk(b"IEND", b"")


PNG = tiny_png()
# `extra_body` adding PNG as the JSON asset "photo1"; the client sends a given `assets` as is.
PHOTO1 = {"assets": {"photo1": {"type": "image", "format": "png", "data_base64": base64.b64encode(PNG).decode()}}}


class Wire:
    """The exchanges one client had with the server, retries included."""

    def __init__(self) -> None:
        self.exchanges: list[dict[str, Any]] = []

    def client(self, **options: Any) -> TypeSafeClient:
        options.setdefault("retry", NO_RETRY)
        http = httpx2.Client(timeout=TIMEOUT, event_hooks={"response": [self._record]})
        return TypeSafeClient(http_client=http, timeout=TIMEOUT, **options)

    def _record(self, response: httpx2.Response) -> None:
        request = response.request
        body = request.content
        encoding = request.headers.get("content-encoding")
        self.exchanges.append(
            {
                "content_type": request.headers.get("content-type"),
                "content_encoding": encoding,
                "body_bytes": len(body),
                # The multipart parts' names; only readable in a body that went uncompressed.
                "parts": None if encoding else [name.decode() for name in PART_NAME.findall(body)],
                "retry_count": request.headers.get("x-typesafe-retry-count"),
                "status": response.status_code,
                "retry_after_ms": response.headers.get("retry-after-ms"),
            }
        )


def score_checks(result: SystemOneResponse) -> list[dict[str, Any]]:
    """The reference's score rule on every score answer the client parsed: score = Σ i·pᵢ."""
    checks = []
    for name, answer in result.answers.items():
        if answer.type == "score":
            expectation = sum(int(level) * p for level, p in answer.probabilities.items())
            checks.append({"name": name, "score": answer.score, "expectation": expectation, "holds": abs(answer.score - expectation) <= 1e-9})
    return checks


def outcome(call: Callable[[], Any]) -> dict[str, Any]:
    """What one client call returned or raised, and how long it took."""
    start = time.monotonic()
    try:
        result = call()
    except TypeSafeAPIError as error:
        out: dict[str, Any] = {
            "ok": False,
            "error": type(error).__name__,
            "status": error.status,
            "message": str(error),
            "body": error.body,
            "request_id": error.request_id,
        }
        if isinstance(error, TypeSafeRateLimitError):
            out["retry_after_ms"] = error.retry_after_ms
    except TypeSafeError as error:
        # Raised by the client before or without a response.
        out = {"ok": False, "error": type(error).__name__, "message": str(error)}
    else:
        out = {"ok": True, "status": result.raw_http_response.status_code, "request_id": result.request_id}
        if isinstance(result, SystemOneResponse):
            out |= {
                "model": result.model,
                "usage": result.usage.model_dump(mode="json"),
                "answers": {name: answer.model_dump(mode="json") for name, answer in result.answers.items()},
                "nouls": sorted(result.nouls),
                "choices": sorted(result.choices),
                "scores": sorted(result.scores),
                "boxes": sorted(result.boxes),
                "score_checks": score_checks(result),
            }
        elif isinstance(result, ListModelsResponse):
            out["models"] = [m.model_dump(mode="json") for m in result.models]
        # The typed answers drop fields the client does not model (debias_passes, raw_probabilities).
        out["raw"] = result.raw_http_response.json()
    out["elapsed_s"] = time.monotonic() - start
    return out


def with_wire(call: Callable[[TypeSafeClient], Any], **options: Any) -> dict[str, Any]:
    """One call on a fresh recording client: its outcome and its exchanges."""
    wire = Wire()
    with wire.client(**options) as client:
        result = outcome(lambda: call(client))
    return result | {"exchanges": wire.exchanges}


def burst(size: int, **options: Any) -> list[dict[str, Any]]:
    """`size` calls sent at once, each from its own client, early in a wall-clock second so that
    the server's per-second window counts them all together."""
    gate = threading.Barrier(size)

    def one(client: TypeSafeClient) -> SystemOneResponse:
        gate.wait()
        return client.system_one(state=STATE, questions={"billing": Noul(instructions="Is this about billing?")})

    time.sleep(1.005 - time.time() % 1)
    with ThreadPoolExecutor(size) as pool:
        return list(pool.map(lambda _: with_wire(one, **options), range(size)))


SCENARIOS: dict[str, Callable[[], dict[str, Any]]] = {}


def scenario(fn: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    SCENARIOS[fn.__name__] = fn
    return fn


@scenario
def every_type() -> dict[str, Any]:
    questions = {
        "billing": Noul(instructions="Is this about billing?", criteria={"true": "about money", "false": "about something else"}),
        "topic": Choice(instructions="What is this ticket about?", criteria={"billing": None, "technical": None, "other": None}),
        "tone": Choice(
            instructions="What is the tone?",
            criteria={"angry": "An upset or hostile message", "calm": "A neutral or polite message"},
        ),
        "urgency": Score(instructions="How urgent is this?", criteria=["not urgent", "somewhat urgent", "very urgent"]),
    }
    return {"call": with_wire(lambda c: c.system_one(state=STATE, questions=questions))}


@scenario
def models() -> dict[str, Any]:
    return {"call": with_wire(lambda c: c.models.list())}


@scenario
def debias() -> dict[str, Any]:
    questions = {
        "billing": Noul(instructions="Is this about billing?"),
        "topic": Choice(instructions="Topic?", criteria={"billing": None, "technical": None}),
        "urgency": Score(instructions="Urgency?", criteria=["low", "medium", "high"]),
    }
    options = {"options": {"debias": "permute", "debias_passes": 2, "return_raw_probabilities": True}}
    return {"call": with_wire(lambda c: c.system_one(state=STATE, questions=questions, extra_body=options))}


@scenario
def compression() -> dict[str, Any]:
    # About 3 KB: well over the client's 1 KiB threshold for compressing a body.
    state = "\n".join(f"Message {i}: {STATE}" for i in range(24))
    questions = {
        "billing": Noul(instructions="Is this about billing?"),
        "topic": Choice(instructions="Topic?", criteria={"billing": None, "technical": None}),
    }

    def ask(c: TypeSafeClient) -> SystemOneResponse:
        return c.system_one(state=state, questions=questions)

    return {"zstd": with_wire(ask), "plain": with_wire(ask, compression=False)}


@scenario
def score_objects() -> dict[str, Any]:
    criteria = [{"level": "low", "hint": "x"}, ["mid", 1], "high"]
    question = {"type": "score", "instructions": "How urgent is this?", "criteria": criteria}
    return {"criteria": criteria, "call": with_wire(lambda c: c.system_one(state=STATE, questions={"urgency": question}))}


@scenario
def images() -> dict[str, Any]:
    question = {"damaged": Noul(instructions="Is the product damaged?")}
    result: dict[str, Any] = {}
    for switch, headers in (("off", None), ("on", IMAGES_ON)):
        image = Image(PNG)

        def attached(c: TypeSafeClient) -> SystemOneResponse:
            with c.attach_assets(image):
                return c.system_one(state=f"Photo: {image}", questions=question, extra_headers=headers)

        result[f"attached_{switch}"] = with_wire(attached)
        result[f"placed_{switch}"] = with_wire(lambda c: c.system_one(state=image, questions=question, extra_headers=headers))
        result[f"json_{switch}"] = with_wire(
            lambda c: c.system_one(state="Photo: photo1", questions=question, extra_headers=headers, extra_body=PHOTO1)
        )
    return result


@scenario
def box() -> dict[str, Any]:
    image = Image(PNG)
    questions = {"dog": Box(instructions="the dog")}
    return {
        "off": with_wire(lambda c: c.system_one(state=image, questions=questions)),
        "on": with_wire(lambda c: c.system_one(state=image, questions=questions, extra_headers=IMAGES_ON)),
        "json_on": with_wire(lambda c: c.system_one(state="photo1", questions=questions, extra_headers=IMAGES_ON, extra_body=PHOTO1)),
    }


@scenario
def errors() -> dict[str, Any]:
    question = {"billing": Noul(instructions="Is this about billing?")}
    wrong_key = "arb_notARealKey0123456789abcdefghijkl"
    return {
        "wrong_key": with_wire(lambda c: c.system_one(state=STATE, questions=question), api_key=wrong_key),
        "wrong_key_models": with_wire(lambda c: c.models.list(), api_key=wrong_key),
        "unknown_model": with_wire(lambda c: c.system_one(state=STATE, questions=question, model="no-such-model")),
        "one_level": with_wire(lambda c: c.system_one(state=STATE, questions={"urgency": Score(instructions="Urgency?", criteria=["only"])})),
    }


@scenario
def rate_limited() -> dict[str, Any]:
    return {"calls": burst(3)}


@scenario
def rate_limited_retried() -> dict[str, Any]:
    # The client's default policy: retries 429 and waits as long as retry-after-ms says.
    return {"calls": burst(2, retry=RetryPolicy())}


def main(names: list[str]) -> int:
    unknown = [n for n in names if n not in SCENARIOS]
    if not names or unknown:
        print(f"usage: sdk_driver.py SCENARIO...; unknown {unknown}; known: {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    for name in names:
        try:
            result = SCENARIOS[name]()
        except Exception:  # noqa: BLE001 - reported to the test, which fails on it
            result = {"crash": traceback.format_exc()}
        print(json.dumps({"scenario": name} | result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
