"""Watching: reconnect hooks, stopping early, and resuming from ``last_sequence``.

A watch delivers each event once, in order. Its ``last_sequence`` is a cursor you can store
and hand to another process, which resumes exactly where this one stopped.
"""

from __future__ import annotations

import colossus_agent_client as colossus
from _worker import worker_executable

SCRIPT = "\n".join(["colossus-script v1", *(f"say line {i}\\n" for i in range(10))])


def on_reconnect(info: colossus.ReconnectInfo) -> None:
    print(f"reconnecting after sequence {info.after_sequence} (attempt {info.attempt})")


def main() -> None:
    options = colossus.SidecarOptions(executable=worker_executable(), application_id="watcher")
    with colossus.Client.start_sidecar(options) as client:
        run_id = client.runs.create(SCRIPT).run.run_id

        # First reader: stop after a few events. Closing a watch never cancels the run.
        with client.runs.watch(run_id, on_reconnect=on_reconnect, idle_timeout=30) as watch:
            for event in watch:
                print(f"first reader got sequence {event.sequence}")
                if event.sequence == 4:
                    break
            cursor = watch.last_sequence

        # Second reader (could be another process): resume after the stored cursor.
        resumed = [e.sequence for e in client.runs.watch(run_id, after_sequence=cursor)]
        print(f"second reader resumed after {cursor}: {resumed}")
        assert resumed[0] == cursor + 1
        assert client.runs.get(run_id).status is colossus.RunStatus.SUCCEEDED


if __name__ == "__main__":
    main()
