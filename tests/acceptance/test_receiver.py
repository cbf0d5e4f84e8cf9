"""``scheduler receiver`` stops cleanly on Ctrl-C and on SIGTERM (docker stop), also when started
as a script's background job, where SIGINT comes ignored and Python raises no KeyboardInterrupt;
and it takes the burst of connections executors open at once without dropping any."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from tests.support.processes import free_port

# Connections opened at once: two executors' calls after an outage (2 x 16), twice over.
BURST = 64


def ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def running_receiver(
    preexec_fn: Callable[[], None] | None = None,
) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """``scheduler receiver`` as its own process once it listens, and its port; killed after."""
    port = free_port()
    receiver = subprocess.Popen(
        [sys.executable, "-m", "scheduler_cli.main", "receiver", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=preexec_fn,
    )
    try:
        assert receiver.stdout is not None
        assert "listening on" in receiver.stdout.readline()
        yield receiver, port
    finally:
        receiver.kill()
        receiver.wait()
        if receiver.stdout is not None:
            receiver.stdout.close()


def test_a_burst_of_connections_is_taken_while_the_receiver_cannot_accept() -> None:
    """Frozen (as a receiver waiting for a core is, for a while), the receiver's kernel still
    completes every connection of a burst: none waits a second for TCP to send its SYN again,
    which would bring its call behind the calls started after it."""
    connections: list[socket.socket] = []
    with running_receiver() as (receiver, port):
        os.kill(receiver.pid, signal.SIGSTOP)
        refused = 0
        try:
            for _ in range(BURST):
                connection = socket.socket()
                connections.append(connection)
                # Well under TCP's first retransmission (1 s): only a SYN the queue took
                # completes.
                connection.settimeout(0.5)
                try:
                    connection.connect(("127.0.0.1", port))
                except TimeoutError:
                    refused += 1
        finally:
            for connection in connections:
                connection.close()
        assert refused == 0, f"{refused} of {BURST} connections not taken at once"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_receiver_answers_then_stops_on_a_signal_it_was_started_ignoring(
    signum: signal.Signals,
) -> None:
    with running_receiver(ignore_interrupts) as (receiver, port):
        request = urllib.request.Request(f"http://127.0.0.1:{port}/hook", data=b"{}")
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200
        receiver.send_signal(signum)
        assert receiver.wait(timeout=30) == 0
        assert receiver.stdout is not None
        assert "POST  /hook  {}" in receiver.stdout.read()
