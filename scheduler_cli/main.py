"""The scheduler service's command: run it, and operate it from a terminal."""

from __future__ import annotations

import argparse
import logging
import os
import stat
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

# Only what every command needs is imported here: a command that calls a running API through
# ``scheduler_client`` starts without the app, the workers and the store and queue adapters;
# the commands that run them import them when they run.
from scheduler_cli import (
    apply,
    calendars,
    dead_letters,
    executions,
    keys,
    receiver,
    schedules,
    signing_secrets,
)
from scheduler_cli.operator import Request, answer_command
from shared.errors import ConfigurationError, Transient

if TYPE_CHECKING:
    from shared.backends import Backends
    from shared.lifecycle import Shutdown
    from shared.metrics import Heartbeat
    from shared.settings import Settings

log = logging.getLogger("scheduler")

LOOPBACK_NETWORKS = ("127.0.0.0/8", "::1/128")
# The commands that call a running API through ``scheduler_client``, by group: what each
# asks, its answer printed by ``answer_command`` (``schedules`` and ``apply`` run their own).
ANSWERED: dict[str, Request] = {
    "executions": executions.request,
    "dead-letters": dead_letters.request,
    "signing-secrets": signing_secrets.request,
    "calendars": calendars.request,
}


class Worker(Protocol):
    heartbeat: Heartbeat

    def run(self, shutdown: Shutdown) -> None: ...


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scheduler",
        description="Run the scheduler service (all in one process with dev, or each component "
        "apart), and operate it: schedules and executions through a running API, API keys in "
        "the store.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    dev = commands.add_parser(
        "dev",
        help="run all four components, embedded (the API in a process of its own)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="The whole service for a laptop: the API (and its console and /docs, in a "
        "child process of its own), the processor, the poller and the executor, on embedded "
        "SQLite backends "
        "kept in --data-dir across restarts. No API key is needed (one default tenant), "
        "webhooks may call loopback (127.0.0.0/8, ::1), and they are signed with the secret "
        "it keeps in --data-dir/webhook-secret. The folder is private (mode 0700: made so, or "
        "tightened to it). Any SCHEDULER_* variable set still applies, except the backends. "
        "Ctrl-C stops it.",
    )
    dev.add_argument("--host", default="127.0.0.1", help="the address the API listens on")
    dev.add_argument("--port", type=int, default=8080, help="the API's port; 0 picks a free one")
    dev.add_argument(
        "--data-dir",
        default="scheduler-data",
        help="where the database, the signing secret and the sealing keys are kept",
    )
    commands.add_parser("api", help="serve the HTTP API (gunicorn processes, uvicorn in each)")
    commands.add_parser("processor", help="apply queue 1 to the store")
    commands.add_parser("poller", help="send due occurrences to queue 2")
    commands.add_parser("executor", help="fire occurrences from queue 2")
    commands.add_parser(
        "secret-key", help="print a new key for SCHEDULER_SECRET_KEYS (seals webhook secrets)"
    )
    commands.add_parser(
        "reseal", help="seal every stored schedule anew with the first of SCHEDULER_SECRET_KEYS"
    )
    for group in (schedules, dead_letters, executions):
        group.add_commands(commands)
    apply.add_commands(commands)
    signing_secrets.add_commands(commands)
    calendars.add_commands(commands)
    keys.add_commands(commands)
    receiver.add_command(commands)
    args = parser.parse_args(argv)
    if args.command in ANSWERED:
        return answer_command(args, dict(os.environ), ANSWERED[args.command])
    if args.command == "schedules":
        return schedules.run(args, dict(os.environ))
    if args.command in ("apply", "export"):
        return apply.run(args, dict(os.environ))
    if args.command == "receiver":
        return receiver.run(args)
    if args.command == "secret-key":
        from shared.secrets import new_secret_key

        print(new_secret_key())
        return 0
    return run_service(args)


def run_service(args: argparse.Namespace) -> int:
    """The commands that run a component (or all of them, ``dev``), or use the store."""
    from scheduler_cli.components import build_executor, build_poller, build_processor
    from scheduler_cli.serving import run_api
    from shared.logs import configure_logging
    from shared.settings import BackendNotSet, Settings

    try:
        if args.command == "dev":
            return run_dev(args.host, args.port, Path(args.data_dir))
        if args.command == "keys":
            return keys.run(args, keys.keys_settings(args, os.environ))
        settings = Settings.from_env()
        # reseal needs the store only; the components, both backends.
        settings.require_backends(*(["store_url"] if args.command == "reseal" else []))
    except BackendNotSet as exc:
        print(f"scheduler {args.command}: {exc}.\n{backends_hint(Path.cwd())}", file=sys.stderr)
        return 2
    except ConfigurationError as exc:
        print(f"scheduler: configuration error: {exc}", file=sys.stderr)
        return 2
    if args.command == "reseal":
        return reseal(settings)
    configure_logging(settings.log_format, settings.log_level, settings.secret_headers)
    if args.command == "api":
        return run_api(settings)
    builders: dict[str, Callable[[Settings, Backends], Worker]] = {
        "processor": build_processor,
        "poller": build_poller,
        "executor": build_executor,
    }
    return run_component(settings, builders[args.command])


def backends_hint(folder: Path) -> str:
    """How to set the backends: production's, or on purpose the data of a ``scheduler dev``
    (the one started in ``folder`` when there is one)."""
    data = folder / "scheduler-data"
    if (data / "scheduler.db").is_file():
        where = "the data of the scheduler dev started in this folder"
        url = f"sqlite:///{data / 'scheduler.db'}"
        secret = f'"$(cat {data / "webhook-secret"})"'
    else:
        where = "the data of a scheduler dev (the folder it ran in)"
        url = "sqlite:///<folder>/scheduler-data/scheduler.db"
        secret = '"$(cat <folder>/scheduler-data/webhook-secret)"'
    return (
        "Point SCHEDULER_STORE_URL and SCHEDULER_QUEUE_URL at your backends:\n"
        "  export SCHEDULER_STORE_URL='mongodb://db.example.com:27017/?replicaSet=rs0'"
        " SCHEDULER_QUEUE_URL='sqs://?region=eu-west-1'\n"
        f"or, on purpose, at {where}, signing and allowing loopback as it does:\n"
        f"  export SCHEDULER_STORE_URL={url} SCHEDULER_QUEUE_URL={url}\n"
        f"  export SCHEDULER_WEBHOOK_SECRET={secret}"
        f" SCHEDULER_ALLOWED_NETWORKS={','.join(LOOPBACK_NETWORKS)}\n"
        "(docs/configuration.md lists every setting)"
    )


def reseal(settings: Settings) -> int:
    """After a new key was put first: once this has run (and queue 1 holds nothing older), the
    old keys can be dropped."""
    from shared.backends import opened_store

    with opened_store(settings) as store:
        count = store.reseal_definitions()
    print(f"scheduler reseal: {count} schedules sealed anew with the first key")
    return 0


def run_component(settings: Settings, build: Callable[[Settings, Backends], Worker]) -> int:
    from shared.backends import open_backends
    from shared.lifecycle import Shutdown, settle_heap
    from shared.metrics import serve_worker_endpoint

    shutdown = Shutdown()
    shutdown.install_signal_handlers()
    try:
        # A store that does not answer yet is waited for: started during an outage, a worker
        # starts when it ends (a stop meanwhile exits quietly).
        backends = open_backends(settings, wait=shutdown)
    except Transient:
        if shutdown.is_set():
            return 0
        raise
    worker = build(settings, backends)
    settle_heap()
    endpoint = None
    if settings.metrics_port:
        endpoint = serve_worker_endpoint(
            settings.metrics_host, settings.metrics_port, worker.heartbeat.healthy
        )
    try:
        worker.run(shutdown)
    finally:
        if endpoint is not None:
            endpoint.shutdown()
        backends.close()
    if getattr(worker, "in_flight", 0):
        # Calls outlived the shutdown timeout; their messages come back to another executor.
        # Leave without waiting for their threads.
        os._exit(0)
    return 0


def private_folder(folder: Path) -> int | None:
    """Make ``folder`` with mode 0700, or take the group's and others' access away from one
    that exists (it holds the database, the signing secret and the sealing keys); the mode it
    had when it changed it, else ``None``. ``ConfigurationError`` when it cannot."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    mode = stat.S_IMODE(folder.stat().st_mode)
    if not mode & 0o077:
        return None
    try:
        folder.chmod(mode & 0o700)
    except OSError as exc:
        raise ConfigurationError(
            f"{folder} is open to others (mode {mode:04o}) and cannot be made private "
            f"({exc.strerror}): use a --data-dir of your own"
        ) from None
    return mode


def dev_settings(host: str, port: int, data_dir: Path) -> Settings:
    from shared.secrets import write_private
    from shared.settings import PREFIX, Settings
    from shared.webhooks import new_webhook_secret

    data_dir = data_dir.resolve()
    private_folder(data_dir)
    url = f"sqlite:///{data_dir / 'scheduler.db'}"
    overrides: dict[str, Any] = {"store_url": url, "queue_url": url, "host": host, "port": port}
    environ = os.environ
    if PREFIX + "LOG_FORMAT" not in environ:
        overrides["log_format"] = "text"
    if PREFIX + "ALLOWED_NETWORKS" not in environ:
        overrides["allowed_networks"] = LOOPBACK_NETWORKS
    if PREFIX + "API_AUTH" not in environ:
        overrides["api_auth"] = "none"  # one default tenant, no key: the quick start
    if PREFIX + "WEBHOOK_SECRET" not in environ:
        secret_file = data_dir / "webhook-secret"
        if not secret_file.exists():
            write_private(secret_file, new_webhook_secret() + "\n")
        overrides["webhook_secret"] = secret_file.read_text().strip()
    return Settings.from_env(environ, **overrides)


def run_dev(host: str, port: int, data_dir: Path) -> int:
    """The four components on the embedded SQLite backends, the API in a child process."""
    from scheduler_cli.components import build_executor, build_poller, build_processor
    from scheduler_cli.serving import ApiProcess
    from shared.backends import KEY_FILE, open_backends
    from shared.lifecycle import Shutdown
    from shared.logs import configure_logging
    from shared.metrics import serve_worker_endpoint

    data_dir = data_dir.resolve()
    loosened = private_folder(data_dir)
    settings = dev_settings(host, port, data_dir)
    configure_logging(settings.log_format, settings.log_level, settings.secret_headers)
    shutdown = Shutdown()
    shutdown.install_signal_handlers()
    backends = open_backends(settings)
    poller = build_poller(settings, backends)
    processor = build_processor(settings, backends)
    # In one process the processor can tell the poller at once that something new is stored.
    processor.on_applied = poller.wake.set
    workers: list[Worker] = [processor, poller, build_executor(settings, backends)]
    # The API in a process of its own: a costly request never delays a fire (serving.py). Its
    # /metrics shows the workers' too, read from this process on a port of loopback.
    endpoint = serve_worker_endpoint(
        "127.0.0.1", 0, lambda: all(worker.heartbeat.healthy() for worker in workers)
    )
    api = ApiProcess(settings, f"http://127.0.0.1:{endpoint.server_port}/metrics")
    threads = [
        threading.Thread(target=worker.run, args=(shutdown,), name=type(worker).__name__)
        for worker in workers
    ]
    for thread in threads:
        thread.start()
    api.start()
    base = f"http://{host}:{api.port}"
    private = "private" if loosened is None else f"made private: it was mode {loosened:04o}"
    exit_code = 0
    try:
        # The banner once the API serves: a request sent on seeing it is answered at once.
        if api.wait_until_serving(shutdown.requested):
            print(
                f"scheduler dev: API on {base}/scheduler-service/v1  (docs: {base}/docs)\n"
                f"scheduler dev: console on {base}/console/\n"
                f"scheduler dev: data in {data_dir} (kept across restarts; {private})\n"
                f"scheduler dev: webhooks signed with the secret in {data_dir / 'webhook-secret'}\n"
                f"scheduler dev: webhook secrets sealed with the keys in {data_dir / KEY_FILE}\n"
                "scheduler dev: no API key needed (one default tenant); Ctrl-C stops",
                flush=True,
            )
            shutdown.requested.wait()
        elif not shutdown.requested.is_set():
            log.error(
                "the API process exited (%s) before it served",
                api.process.exitcode,
                extra={"event": "api_exited"},
            )
            exit_code = 1
    finally:
        api.stop()
        endpoint.shutdown()
        for thread in threads:
            thread.join(timeout=settings.shutdown_timeout_seconds)
        backends.close()
    log.info("scheduler dev stopped", extra={"event": "dev_stopped"})
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
