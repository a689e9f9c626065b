"""Runner actions performed while a client still holds its connections.

A ``restart_worker`` step with ``at_sync: <step id>`` does not cut the case into
two instructions. It is bound to a sync point of that client step instead: a
``sync`` step, or a ``watch`` whose ``sync_after_events`` says after how many
delivered events to stop. The client writes a ``sync`` line there and waits;
the runner stops the worker (gracefully or with SIGKILL, optionally into a
wrong listener), releases the client, and brings the worker back after
``down_seconds`` (a number, or ``until_result``: only once the client has
reported), optionally dropping its first ``silent_closes`` connections silently.
The client then carries on with the same SDK client and the same in-flight watch,
which is what a restart really looks like to an application.

With ``times: N`` the action is a series instead: the runner releases the client at
once and, while it carries on, restarts the worker N times inside its own process
(the fault channel's ``restart`` op: the SIGTERM path, then a fresh start on the same
port), ``interval_seconds`` of serving between two restarts and ``down_seconds`` of
closed listener in each.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .observations import merge_observations

if TYPE_CHECKING:
    from .worker import ManagedWorker

UNTIL_RESULT = "until_result"
# Bounds of a series of in-place restarts (``times``).
MAX_TIMES = 100
MAX_SERIES_SECONDS = 5.0


class SyncPlanError(ValueError):
    """A case binds actions to sync points in a way the runner cannot carry out."""


def is_sync_point(step: dict[str, Any]) -> bool:
    """True for a step at which the client stops and waits for the runner."""
    if step["op"] == "sync":
        return True
    return step["op"] == "watch" and "sync_after_events" in step.get("args", {})


def sync_point_ids(steps: list[dict[str, Any]]) -> list[str]:
    return [s["id"] for s in steps if is_sync_point(s)]


def is_bound(step: dict[str, Any]) -> bool:
    """True for a runner action performed at a sync point rather than between instructions."""
    return step["op"] == "restart_worker" and "at_sync" in step.get("args", {})


def bound_actions(steps: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The steps without the bound actions, and each bound action by its sync point."""
    kept = [s for s in steps if not is_bound(s)]
    actions = {s["args"]["at_sync"]: s for s in steps if is_bound(s)}
    return kept, actions


def check_plan(steps: list[dict[str, Any]], cross_sdk: bool) -> None:
    """Raises SyncPlanError unless every sync point has exactly one action bound after it."""
    seen: list[str] = []
    points = set()
    bound: dict[str, str] = {}
    for step in steps:
        args = step.get("args", {})
        if is_sync_point(step):
            if cross_sdk:
                raise SyncPlanError(f"step {step['id']}: cross-SDK cases have no sync points")
            after = args.get("sync_after_events")
            if step["op"] == "watch" and (isinstance(after, bool) or not isinstance(after, int) or after < 1):
                raise SyncPlanError(f"step {step['id']}: sync_after_events must be an integer >= 1")
            points.add(step["id"])
        if is_bound(step):
            target = args["at_sync"]
            if target not in points or target not in seen:
                raise SyncPlanError(
                    f"step {step['id']}: at_sync names {target!r}, which is not an earlier sync point"
                )
            if target in bound:
                raise SyncPlanError(
                    f"step {step['id']}: sync point {target} already has action {bound[target]}"
                )
            bound[target] = step["id"]
        if step["op"] == "restart_worker" and "times" in args:
            _check_series(step)
        elif step["op"] == "restart_worker":
            down = args.get("down_seconds", 0)
            if down == UNTIL_RESULT and not is_bound(step):
                raise SyncPlanError(f"step {step['id']}: down_seconds {UNTIL_RESULT} needs at_sync")
            if down != UNTIL_RESULT and (
                isinstance(down, bool) or not isinstance(down, (int, float)) or not 0 <= down <= 60
            ):
                raise SyncPlanError(
                    f"step {step['id']}: down_seconds must be 0-60 seconds or {UNTIL_RESULT!r}, not {down!r}"
                )
            silent = args.get("silent_closes", 0)
            if silent and not is_bound(step):
                raise SyncPlanError(f"step {step['id']}: silent_closes needs at_sync")
            if isinstance(silent, bool) or not isinstance(silent, int) or not 0 <= silent <= 64:
                raise SyncPlanError(
                    f"step {step['id']}: silent_closes must be an integer 0-64, not {silent!r}"
                )
        seen.append(step["id"])
    unbound = sorted(points - set(bound))
    if unbound:
        raise SyncPlanError(f"sync point(s) {', '.join(unbound)} have no runner action (at_sync)")


def _check_series(step: dict[str, Any]) -> None:
    """A series of in-place restarts: at a sync point, graceful, the genuine listener."""
    args = step["args"]
    times = args["times"]
    if isinstance(times, bool) or not isinstance(times, int) or not 1 <= times <= MAX_TIMES:
        raise SyncPlanError(f"step {step['id']}: times must be an integer 1-{MAX_TIMES}, not {times!r}")
    if not is_bound(step):
        raise SyncPlanError(f"step {step['id']}: times needs at_sync")
    if args.get("mode", "term") != "term":
        raise SyncPlanError(f"step {step['id']}: a series of restarts is graceful (mode term)")
    for unsupported in ("listener", "silent_closes"):
        if unsupported in args:
            raise SyncPlanError(f"step {step['id']}: {unsupported} does not go with times")
    for name in ("interval_seconds", "down_seconds"):
        value = args.get(name, 0)
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not 0 <= value <= MAX_SERIES_SECONDS
        ):
            raise SyncPlanError(
                f"step {step['id']}: {name} must be 0-{MAX_SERIES_SECONDS:g} seconds "
                f"with times, not {value!r}"
            )


class SyncActions:
    """Carries out the bound actions of one case execution as its client reaches them."""

    def __init__(
        self,
        case_id: str,
        actions: dict[str, dict[str, Any]],
        worker: ManagedWorker | None,
        observe: Callable[[], dict[str, Any]],
    ):
        self.case_id = case_id
        self.actions = actions
        self.worker = worker
        self.observe = observe
        self.reached: list[str] = []
        self.problems: list[str] = []
        self.observations: dict[str, Any] = {}
        self._reports: list[dict[str, Any]] = []
        self._starter: threading.Thread | None = None
        self._down_until_result: tuple[dict[str, Any], float] | None = None
        self._series: _Series | None = None

    # -- called by ClientProcess while the client waits ---------------------------

    def on_sync(self, step_id: str) -> None:
        """Performs the action bound to ``step_id``; the client is released when this returns."""
        self.reached.append(step_id)
        action = self.actions[step_id]
        self._join()
        if "times" in action.get("args", {}):
            if self.worker is None or self.worker.control is None:
                self.problems.append(f"runner action {action['id']}: this case has no worker to restart")
                return
            self._finish_series()
            self._series = _Series(action, self.worker)
            return
        try:
            if self.worker is None:
                raise RuntimeError("this case has no worker to restart")
            self.observations = merge_observations(self.observations, self.observe())
            args = action.get("args", {})
            self.worker.halt(hard=args.get("mode", "term") == "kill", listener=args.get("listener"))
        except Exception as exc:
            self.problems.append(f"runner action {action['id']} at sync point {step_id} failed: {exc}")
            return
        stopped = time.monotonic()
        down = args.get("down_seconds", 0)
        if down == UNTIL_RESULT:
            self._down_until_result = (action, stopped)
        elif down > 0:
            self._starter = threading.Thread(
                target=self._start_later, args=(action, stopped, down), daemon=True
            )
            self._starter.start()
        else:
            self._start(action, stopped)

    # -- called by the runner once the client's instruction is over ---------------

    def finish(self) -> None:
        """Brings a worker that is still down back up (``until_result``, or a late start),
        and waits for a series of restarts to end."""
        self._finish_series()
        self._join()
        if self._down_until_result is not None:
            action, stopped = self._down_until_result
            self._down_until_result = None
            self._start(action, stopped)

    def with_reports(self, client_reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The client's step reports with each action's report placed right after its sync
        point (``value.down_seconds``: from the stop until the runner began to start the
        worker again)."""
        by_point = {self._at(r["id"]): r for r in self._reports}
        self._reports = []
        merged: list[dict[str, Any]] = []
        for report in client_reports:
            merged.append(report)
            if report.get("id") in by_point:
                merged.append(by_point.pop(report["id"]))
        return merged + list(by_point.values())

    def _at(self, action_id: str) -> str:
        return next(point for point, action in self.actions.items() if action["id"] == action_id)

    def take_observations(self) -> dict[str, Any]:
        observations, self.observations = self.observations, {}
        return observations

    def missing(self, steps: list[dict[str, Any]]) -> list[str]:
        """A description of every sync point of ``steps`` the client never reached."""
        return [
            f"the client never reached sync point {sid} (its runner action {self.actions[sid]['id']} "
            "did not run): a client must write a sync line there and wait for release"
            for sid in sync_point_ids(steps)
            if sid in self.actions and sid not in self.reached
        ]

    # -- plumbing ---------------------------------------------------------------------

    def _start_later(self, action: dict[str, Any], stopped: float, down: float) -> None:
        time.sleep(max(0.0, stopped + down - time.monotonic()))
        self._start(action, stopped)

    def _start(self, action: dict[str, Any], stopped: float) -> None:
        assert self.worker is not None
        down = round(time.monotonic() - stopped, 3)
        try:
            # silent_closes: the fresh worker drops its first connections before any TLS
            # byte, armed at start-up since the client may reconnect before any begin_case.
            self.worker.start(silent_closes=action.get("args", {}).get("silent_closes", 0))
            if self.worker.control is not None:
                # The client may reconnect before the case is armed again: keep what
                # this fresh worker saw since it started.
                self.worker.control.begin_case(self.case_id, [], keep_observations=True)
        except Exception as exc:
            self.problems.append(f"runner action {action['id']}: the worker did not come back: {exc}")
        self._reports.append({"id": action["id"], "op": action["op"], "value": {"down_seconds": down}})

    def _finish_series(self) -> None:
        if self._series is not None:
            series, self._series = self._series, None
            report, problem = series.finish()
            self._reports.append(report)
            if problem:
                self.problems.append(problem)

    def _join(self) -> None:
        if self._starter is not None:
            self._starter.join()
            self._starter = None


class _Series:
    """``times`` in-place restarts of the worker on a thread of their own, while the client
    carries on; each waits ``interval_seconds`` of serving first."""

    def __init__(self, action: dict[str, Any], worker: ManagedWorker):
        args = action["args"]
        self.action = action
        self.control = worker.control
        self.times = int(args["times"])
        self.interval = float(args.get("interval_seconds", 0))
        self.down = float(args.get("down_seconds", 0))
        self.done = 0
        self.error: str | None = None
        self.started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name=f"restarts-{action['id']}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        assert self.control is not None
        for _ in range(self.times):
            time.sleep(self.interval)
            try:
                self.control.restart_in_place(self.down)
            except Exception as exc:
                self.error = str(exc)
                return
            self.done += 1

    def finish(self) -> tuple[dict[str, Any], str | None]:
        """Called once the client reported: waits for the remaining restarts; returns the
        action's report and a problem, if the worker failed to restart."""
        before_result = self.done
        seconds = round(time.monotonic() - self.started, 3)
        self._thread.join()
        report = {
            "id": self.action["id"],
            "op": self.action["op"],
            "value": {
                "restarts": self.done,
                "before_result": before_result,
                "seconds_before_result": seconds,
            },
        }
        problem = None
        if self.error is not None:
            which = f"restart {self.done + 1} of {self.times}"
            problem = f"runner action {self.action['id']}: {which} failed: {self.error}"
        return report, problem
