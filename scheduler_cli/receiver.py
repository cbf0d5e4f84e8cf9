"""``scheduler receiver``: something for schedules to call while trying the service out.

It answers every request ``200``, whatever its method, and prints one line for each: the
method, path and query, the occurrence it is for (``Idempotency-Key``) and the start of its
body. It serves no file and keeps nothing. Python's own ``http.server`` answers ``501`` to
anything but ``GET`` and ``HEAD``, which the executor takes for a failure.
"""

from __future__ import annotations

import argparse
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO

# How much of a body is read (the rest is left unread and the connection closed), and shown.
MAX_BODY_BYTES = 1024 * 1024
SHOWN_BODY_CHARACTERS = 200


class ReceiverServer(ThreadingHTTPServer):
    """A threading HTTP server whose listen queue holds a burst of new connections.

    An executor opens up to its concurrency of connections to a host at once (after an outage,
    two executors of 16 open 32 together). Python's default listen queue is 5 connections: Linux
    drops the SYN of each connection beyond it while the accepting thread is busy or waits for a
    core, and the client sends it again only after TCP's first retransmission timeout, one
    second later; so a call started first reached the receiver a second late, behind hundreds
    started after it. The kernel caps the queue at ``net.core.somaxconn`` (4096 on Linux 5.4+).
    """

    request_queue_size = 1024


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    receiver = commands.add_parser(
        "receiver",
        help="answer every HTTP request 200 and print it: something for schedules to call",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="A web server for trying schedules out: every request, whatever its "
        "method, is answered 200 and printed on one line (method, path, Idempotency-Key, "
        "the start of the body). It serves no file. Ctrl-C stops it.",
    )
    receiver.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    receiver.add_argument("--port", type=int, default=9000, help="the port to listen on")


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    printed = out or sys.stdout

    class Handler(BaseHTTPRequestHandler):
        server_version = "scheduler-receiver"

        def answer(self) -> None:
            length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY_BYTES)
            body = self.rfile.read(length).decode("utf-8", errors="replace") if length else ""
            key = self.headers.get("Idempotency-Key")
            parts = [self.command, self.path]
            if key:
                parts.append(f"Idempotency-Key: {key}")
            if body:
                shown = " ".join(body.split())
                if len(shown) > SHOWN_BODY_CHARACTERS:
                    shown = shown[: SHOWN_BODY_CHARACTERS - 1] + "…"
                parts.append(shown)
            printed.write("  ".join(parts) + "\n")
            printed.flush()
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = answer

        def log_message(self, format: str, *args: Any) -> None:
            """The line ``answer`` prints is the log."""

    server = ReceiverServer((args.host, args.port), Handler)
    # Ctrl-C and SIGTERM (docker stop) stop it cleanly, also when it was started with SIGINT
    # ignored (a job a script puts in the background): Python then never raises
    # KeyboardInterrupt by itself, and the receiver could only be killed.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _interrupt)
    port = server.server_address[1]
    printed.write(f"scheduler receiver: listening on http://{args.host}:{port}/ (Ctrl-C stops)\n")
    printed.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt
