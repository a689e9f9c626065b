"""--serve: one case, a client started by hand, and the same verdict as a full run."""

import re
import subprocess
import threading

from colossus_conformance.debug import serve

from .conftest import make_cases


def test_served_case_is_judged_from_the_hand_started_client(tmp_path, validator, fake_client, capsys):
    [case] = make_cases(validator, ["selftest.served"])
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("rc", serve(case, fake_client, tmp_path)))
    thread.start()
    command = None
    for _ in range(100):
        match = re.search(r"^  (cd .*)$", capsys.readouterr().out, re.MULTILINE)
        if match:
            command = match.group(1)
            break
        thread.join(0.1)
    assert command, "serve did not print a client command"
    subprocess.run(["bash", "-c", command], check=True, timeout=30)
    thread.join(30)
    assert outcome["rc"] == 0
    assert "PASS" in capsys.readouterr().out
