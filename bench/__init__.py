"""Benchmarks of the scheduler on this machine, over loopback only.

One module per benchmark, each runnable as ``python -m bench.<name>`` and each printing its
figures and the machine it ran on: ``firing`` (precision and throughput, with APScheduler 3
side by side), ``creation`` (the API), ``dispatch`` (the poller, and the claim cost against the
number of stored schedules), ``storage`` (bytes per schedule and per execution).
``python -m bench.run_all`` (or ``bench/run-all``) runs them all. Results and the exact
commands are in ``BENCHMARKS.md``.

The embedded SQLite backends are the default; ``--store-url mongodb://…`` and
``--queue-url sqs+http://…`` point a benchmark at MongoDB or SQS instead.
"""
