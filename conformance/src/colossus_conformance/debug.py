"""``--serve CASE``: run one case with a client the developer starts by hand.

The runner starts the worker configuration the case needs, arms its faults and
writes the protocol messages to a file. The developer starts the client
(under a debugger if they like) reading that file on stdin and writing its
output to a result file. Bearers never touch the disk: they are written into a
named pipe (mode 0600, inside a 0700 folder) when the client opens it with
``--bearer-fifo``. Once the result arrives, the runner judges it exactly as in
a normal run and prints the verdict.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
import threading
import time
from pathlib import Path

from . import protocol
from .case_preparation import prepare
from .catalogue import Case
from .judging import judge
from .runner import Options, Suite
from .sdks import ClientSpec


def serve(case: Case, client: ClientSpec | None, results_dir: Path) -> int:
    if any(step["op"] == "restart_worker" for step in case.steps):
        print(f"{case.id} restarts the worker between client segments; --serve handles one segment only")
        return 2
    options = Options(results_dir=results_dir, known_failures_dir=results_dir)
    suite = Suite([case], options)
    folder: Path | None = None
    try:
        worker = suite.worker(case.worker)
        prepared = prepare(case, worker, 3600.0, suite.scratch)
        if worker is not None and worker.control is not None:
            worker.control.begin_case(case.id, [dict(f) for f in case.faults])
        folder = Path(tempfile.mkdtemp(prefix="conformance-debug-"))
        folder.chmod(0o700)
        fifo = folder / "bearers"
        os.mkfifo(fifo, 0o600)
        instructions = folder / "instructions.jsonl"
        result_path = folder / "result.jsonl"
        instructions.write_bytes(
            protocol.encode_line(protocol.hello())
            + protocol.encode_line(prepared.instruction)
            + protocol.encode_line(protocol.shutdown())
        )

        def feed() -> None:
            with open(fifo, "wb") as pipe:  # blocks until the client opens it
                for bearer in prepared.bearers:
                    pipe.write(protocol.encode_bearer_frame(bearer))

        threading.Thread(target=feed, daemon=True).start()
        command = " ".join(shlex.quote(a) for a in (client.command if client else ("<client>",)))
        cwd = client.folder if client else Path.cwd()
        print(f"case {case.id} is armed on worker {case.worker!r}.")
        print("instruction:")
        print(json.dumps(prepared.instruction, indent=2))
        print("\nstart the client (prefix it with your debugger):")
        print(
            f"  cd {shlex.quote(str(cwd))} && {command} --bearer-fifo {fifo} < {instructions} > {result_path}"
        )
        print("\nwaiting for its result (Ctrl-C to stop)...", flush=True)
        while True:
            if result_path.exists():
                for line in result_path.read_bytes().splitlines():
                    if line.strip():
                        message = protocol.decode_line(line)
                        if message.get("type") == "result":
                            observations = worker.control.observations() if worker and worker.control else {}
                            failures = judge(case, message, observations, prepared.bearers, prepared.nonce)
                            print(json.dumps({"result": message, "worker": observations}, indent=2))
                            print("PASS" if not failures else "FAIL:\n  " + "\n  ".join(failures))
                            return 0 if not failures else 1
            time.sleep(0.5)
    except KeyboardInterrupt:
        return 130
    finally:
        suite.close()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
