"""``scheduler receiver`` stops cleanly on Ctrl-C and on SIGTERM (docker stop), also when started
as a script's background job, where SIGINT comes ignored and Python raises no KeyboardInterrupt."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.request

import pytest

from tests.support.processes import free_port


def ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_receiver_answers_then_stops_on_a_signal_it_was_started_ignoring(
    signum: signal.Signals,
) -> None:
    port = free_port()
    receiver = subprocess.Popen(
        [sys.executable, "-m", "scheduler_cli.main", "receiver", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=ignore_interrupts,
    )
    try:
        assert receiver.stdout is not None
        assert "listening on" in receiver.stdout.readline()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/hook", data=b"{}")
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200
        receiver.send_signal(signum)
        assert receiver.wait(timeout=30) == 0
        assert "POST  /hook  {}" in receiver.stdout.read()
    finally:
        receiver.kill()
        receiver.wait()
        if receiver.stdout is not None:
            receiver.stdout.close()
