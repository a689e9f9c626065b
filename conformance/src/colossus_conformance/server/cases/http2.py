"""HTTP/2 as RFC 9113 has it (W1), judged by h2spec, a suite nobody here wrote."""

from __future__ import annotations

import asyncio
import re
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from ..catalogue import case, expect
from ..context import CaseContext

SECONDS = 120.0


@case("http2.h2spec", ["W1"], "every h2spec test passes over TLS (none failed, none skipped)", tool="h2spec")
async def h2spec(ctx: CaseContext) -> None:
    assert ctx.h2spec is not None
    host, port = ctx.worker.address
    with tempfile.TemporaryDirectory(prefix="server-h2spec-") as scratch:
        report = Path(scratch) / "h2spec.xml"
        proc = await asyncio.create_subprocess_exec(
            ctx.h2spec,
            "-h",
            host,
            "-p",
            str(port),
            "-t",
            "-k",
            "-j",
            str(report),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env={"NO_COLOR": "1"},
        )
        await asyncio.wait_for(proc.wait(), SECONDS)
        expect(report.exists(), "h2spec wrote no report")
        # h2spec writes a failure's text unescaped, so it is dropped before parsing.
        text = re.sub(r"<(failure|error)>.*?</\1>", r"<\1/>", report.read_text(errors="replace"), flags=re.S)
    bad, run = [], 0
    for test in ET.fromstring(text).iter("testcase"):  # noqa: S314 - h2spec's report, written just now
        run += 1
        if any(test.find(tag) is not None for tag in ("failure", "error", "skipped")):
            bad.append(f"{test.get('package')}: {test.get('classname')}")
    expect(run > 0, "h2spec ran no test")
    expect(not bad, f"{len(bad)} of {run} h2spec tests did not pass: " + "; ".join(bad[:5]))
