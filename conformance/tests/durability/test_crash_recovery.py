"""W13 end to end: many kill -9 points during create/progress/respond/cancel."""

from __future__ import annotations

from crashloop import run_crash_loop


def test_crash_loop_loses_nothing_and_settles_honestly(short_tmp):
    report = run_crash_loop(short_tmp, iterations=30, seed=13)
    summary = (f"{report.iterations} kills, {report.runs} runs, {report.answers} answers, "
               f"{report.cancels} cancels, statuses {dict(report.statuses)}, "
               f"recovered {dict(report.recovered)}")
    print(summary)
    assert report.iterations == 30
    assert report.runs > 30, summary
    assert report.problems == [], summary + "\n" + "\n".join(report.problems[:20])
    assert report.lost == 0
    # Every interesting ending actually happened at least once.
    assert report.statuses["RUN_STATUS_SUCCEEDED"] > 0, summary
    assert report.recovered["WAITING_FOR_INPUT"] > 0, summary
    assert report.recovered["RUNNING after an effect"] > 0, summary
