"""How ``scheduler api`` and ``scheduler dev`` serve the API over HTTP.

Both run the same front end (``scheduler_service.front``, ``scheduler_service.connections``):
an event loop per process holds the connections, a pool of threads runs the requests.

- ``scheduler api``: gunicorn starts ``SCHEDULER_API_WORKERS`` processes and restarts any that
  dies or stops answering its heartbeat (a SIGHUP replaces them one by one, a SIGTERM drains
  them); each runs uvicorn on gunicorn's listening socket (``ApiWorker``), and stops once
  gunicorn's process is gone.
- ``scheduler dev``: uvicorn in a child process of its own (``ApiProcess``), so that a request
  that holds the CPU (or the interpreter's lock) never delays the processor, poller and executor
  of the parent; both open the same SQLite file.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import resource
import signal
import socket
import threading
from multiprocessing.synchronize import Event as EventType
from typing import Any

import uvicorn
from uvicorn_worker import UvicornWorker

from scheduler_service.app import create_app
from scheduler_service.connections import uvicorn_config, uvicorn_options
from scheduler_service.front import WsgiFront
from shared.backends import Backends, open_backends
from shared.logs import configure_logging
from shared.settings import Settings

log = logging.getLogger("scheduler")

# Descriptors a process keeps beside its connections: the store, the queues, logs, its pool.
RESERVED_DESCRIPTORS = 64
# How long a stopping ``scheduler dev`` waits for its API process before killing it.
API_STOP_SECONDS = 10.0
# How often ``scheduler dev`` looks whether its starting API process exited.
READY_CHECK_SECONDS = 0.1


class _PlainLines(logging.Filter):
    """uvicorn gives its lines a ``color_message`` (ANSI colours), which every line of ours
    would otherwise carry as a field."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.__dict__.pop("color_message", None)
        return True


def uvicorn_logs_as_ours() -> None:
    """uvicorn's lines go through this process's logging (its format, JSON in production); no
    access log (requests are counted on /metrics)."""
    for name in ("uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
        logger.filters[:] = [_PlainLines()]
    access = logging.getLogger("uvicorn.access")
    access.handlers.clear()
    access.propagate = False


def api_front(
    settings: Settings, backends: Backends, peer_metrics_url: str | None = None
) -> WsgiFront:
    """The API as the front end serves it."""
    app = create_app(settings, backends, peer_metrics_url=peer_metrics_url)
    return WsgiFront(app, settings.api_threads, settings.max_body_bytes)


def allow_connections(settings: Settings) -> Settings:
    """Raises this process's limit of open descriptors to its hard limit, for the connections
    it will hold; lowers ``api_max_connections`` (with a warning) if even that is too few."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = settings.api_max_connections + RESERVED_DESCRIPTORS
    if soft != resource.RLIM_INFINITY and soft < wanted:
        soft = wanted if hard == resource.RLIM_INFINITY else min(hard, wanted)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    room = soft - RESERVED_DESCRIPTORS if soft != resource.RLIM_INFINITY else wanted
    if room >= settings.api_max_connections:
        return settings
    log.warning(
        "SCHEDULER_API_MAX_CONNECTIONS=%d is more than this process may open (%d descriptors):"
        " serving %d connections",
        settings.api_max_connections,
        soft,
        max(room, 1),
        extra={"event": "api_connections_lowered"},
    )
    return settings.with_changes(api_max_connections=max(room, 1))


def run_api(settings: Settings) -> int:
    """``scheduler api``: gunicorn's arbiter and ``SCHEDULER_API_WORKERS`` ``ApiWorker``s."""
    from gunicorn.app.base import BaseApplication
    from gunicorn.glogging import Logger

    settings = allow_connections(settings)

    class SharedLogger(Logger):  # type: ignore[misc]
        """gunicorn's own lines (start, workers booting and dying, errors) go through this
        process's logging, in its format: in production every line on stderr is JSON."""

        def setup(self, cfg: Any) -> None:
            super().setup(cfg)
            for logger in (self.error_log, self.access_log):
                logger.handlers.clear()
                logger.propagate = True

    class ApiWorker(UvicornWorker):  # type: ignore[misc]
        """A gunicorn worker that serves with uvicorn and the API's connection rules."""

        CONFIG_KWARGS = uvicorn_options(settings)

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # UvicornWorker gave uvicorn's loggers gunicorn's handlers, which SharedLogger
            # emptied.
            uvicorn_logs_as_ours()

        def run(self) -> None:
            # gunicorn's own workers leave once their arbiter is gone (``kill -9`` of it);
            # uvicorn's never looks, and served on, holding the port, with nothing to restart
            # it or stop it.
            threading.Thread(target=_stop_with_parent, args=(self.ppid,), daemon=True).start()
            super().run()

    class Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            self.cfg.set("bind", f"{settings.host}:{settings.port}")
            self.cfg.set("workers", settings.api_workers)
            self.cfg.set("worker_class", ApiWorker)
            self.cfg.set("keepalive", 5)
            self.cfg.set("accesslog", None)
            self.cfg.set("logger_class", SharedLogger)
            # gunicorn's control socket (``gunicornc``: reload, shutdown, add or kill workers) is
            # one path per user ($XDG_RUNTIME_DIR or ~/.gunicorn/gunicorn.ctl): every instance
            # on a machine would bind the same file, each taking it from the last (a command
            # then drives whichever bound last, and the first to stop deletes the others'). It
            # is also stopped and restarted around each worker's fork. Signals manage the
            # arbiter (docs/operations.md).
            self.cfg.set("control_socket_disable", True)

        def load(self) -> Any:
            # Each worker opens its own connections after the fork.
            return api_front(settings, open_backends(settings))

    Server().run()
    return 0


class ApiProcess:
    """``scheduler dev``'s API: uvicorn in a child process on a socket bound here (so that the
    port, 0 for a free one, is known at once). Its ``/metrics`` shows this process's too, read
    from ``peer_metrics_url``."""

    def __init__(self, settings: Settings, peer_metrics_url: str) -> None:
        self.listener = socket.create_server((settings.host, settings.port), backlog=2048)
        self.port: int = self.listener.getsockname()[1]
        # ``spawn``: this process runs threads, which a fork would copy in any state.
        context = multiprocessing.get_context("spawn")
        # Set by the child once it serves: until then (its imports, its app: 15-25 s on a
        # loaded two-core machine) a request waits in the socket's backlog.
        self.ready = context.Event()
        self.process = context.Process(
            target=_serve_in_child,
            args=(settings, self.listener, os.getpid(), peer_metrics_url, self.ready),
            name="scheduler-api",
        )

    def start(self) -> None:
        self.process.start()
        # The child has its own copy (made as the arguments were sent): only it listens now.
        self.listener.close()

    def wait_until_serving(self, stopping: threading.Event) -> bool:
        """Until the child serves (``True``), or it exits or ``stopping`` is set first."""
        while not self.ready.wait(READY_CHECK_SECONDS):
            if stopping.is_set() or not self.process.is_alive():
                return False
        return True

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.terminate()  # SIGTERM: uvicorn finishes the requests under way
            self.process.join(API_STOP_SECONDS)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


def _serve_in_child(
    settings: Settings,
    listener: socket.socket,
    parent: int,
    peer_metrics_url: str,
    ready: EventType,
) -> None:
    configure_logging(settings.log_format, settings.log_level, settings.secret_headers)
    uvicorn_logs_as_ours()
    settings = allow_connections(settings)
    backends = open_backends(settings)
    front = api_front(settings, backends, peer_metrics_url)
    server = uvicorn.Server(uvicorn_config(front, settings))
    threading.Thread(target=_stop_with_parent, args=(parent,), daemon=True).start()
    ready.set()
    try:
        server.run(sockets=[listener])
    finally:
        front.close()
        backends.close()


def _stop_with_parent(parent: int) -> None:
    """Stops this process (as SIGTERM would) once its parent is gone, even by ``kill -9``: the
    API process of ``scheduler dev``, a worker of ``scheduler api``."""
    while os.getppid() == parent:
        threading.Event().wait(1.0)
    os.kill(os.getpid(), signal.SIGTERM)
