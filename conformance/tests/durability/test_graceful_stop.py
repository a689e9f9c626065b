"""SIGTERM: watches end with a retryable UNAVAILABLE, discovery files go, exit 0."""

from __future__ import annotations

import threading
import time

import grpc
from worker_harness import Worker, enroll, error_reason, private_dir, script

RUNNING = {2, 3}  # RUNNING, WAITING_FOR_INPUT


def test_sigterm_closes_watches_retryably_and_withdraws_discovery(short_tmp):
    pub = private_dir(short_tmp / "pub-stop")
    bearer = enroll(pub, "app")
    worker = Worker.start(pub)
    outcome: dict[str, object] = {}
    with worker.client(bearer) as c:
        run = c.create("stop-1", script("say before", "sleep 60000", "say after")).run
        c.wait_status(run.run_id, {2})
        stream = c.watch(run.run_id, timeout=60)
        first = next(stream)

        def drain() -> None:
            try:
                for _ in stream:
                    pass
                outcome["error"] = None
            except grpc.RpcError as err:
                outcome["error"] = err

        reader = threading.Thread(target=drain)
        reader.start()
        time.sleep(0.2)
        code = worker.terminate()
        reader.join(20)
    assert first.event.sequence == 1
    assert code == 0
    err = outcome["error"]
    assert isinstance(err, grpc.RpcError)
    assert error_reason(err) == (grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE")
    assert not (pub / "endpoint.json").exists()
    assert not (pub / "certificate.pem").exists()

    # The run survived the stop and can be watched again after a restart.
    again = Worker.start(pub)
    try:
        with again.client(bearer) as c:
            got = c.get(run.run_id)
            assert got.last_sequence >= first.event.sequence
            events = []
            for item in c.watch(run.run_id, after=0, timeout=5):
                events.append(item.event.sequence)
                if item.event.sequence >= got.last_sequence:
                    break
            assert events == list(range(1, got.last_sequence + 1))
    finally:
        again.terminate()


def test_sigterm_with_no_clients_is_quick(short_tmp):
    pub = private_dir(short_tmp / "pub-stop-idle")
    worker = Worker.start(pub)
    t0 = time.monotonic()
    assert worker.terminate() == 0
    assert time.monotonic() - t0 < 5
    assert not (pub / "endpoint.json").exists()
