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


def test_waiting_run_survives_a_graceful_stop_but_not_a_crash(short_tmp):
    """INTERRUPTED is for unclean stops: after SIGTERM the question stays answerable."""
    from worker_harness import run_service_pb2

    pub = private_dir(short_tmp / "pub-stop-waiting")
    bearer = enroll(pub, "app")
    worker = Worker.start(pub)
    with worker.client(bearer) as c:
        kept = c.create("kept", script("say hi", "ask Keep going? | yes | no", "say done")).run
        lost = c.create("lost", script("ask Again? | yes | no", "say never")).run
        asked = c.wait_status(kept.run_id, {3}).pending_interaction.interaction_id
        c.wait_status(lost.run_id, {3})
    assert worker.terminate() == 0

    worker = Worker.start(pub)
    try:
        with worker.client(bearer) as c:
            run = c.get(kept.run_id)
            assert run.status == 3 and run.pending_interaction.interaction_id == asked
            c.runs.RespondInteraction(run_service_pb2.RespondInteractionRequest(
                run_id=kept.run_id, interaction_id=asked,
                prompt=run_service_pb2.PromptAnswer(choice="yes")),
                metadata=c.metadata, timeout=10)
            done = c.wait_status(kept.run_id, {5})
            assert done.result.output_text == "hidone"
            kinds = [e.event.WhichOneof("payload") for e in c.watch(kept.run_id, timeout=10)]
            assert kinds.count("interaction_requested") == 1
            assert c.get(lost.run_id).status == 3  # still waiting too
    finally:
        worker.kill()  # unclean this time

    worker = Worker.start(pub)
    try:
        with worker.client(bearer) as c:
            assert c.get(lost.run_id).status == 8  # INTERRUPTED after the crash
    finally:
        worker.terminate()
