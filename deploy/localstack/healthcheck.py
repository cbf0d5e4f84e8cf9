"""docker compose's healthcheck of LocalStack: exits 0 only while SQS answers with every queue
of the pipeline (``init-queues.py`` made them), 1 otherwise, saying why."""

import os
import sys

import boto3
from botocore.config import Config

QUEUES = ("scheduler-dead-letters", "scheduler-mutations", "scheduler-occurrences")

port = os.environ.get("GATEWAY_LISTEN", ":4566").rsplit(":", 1)[1]
sqs = boto3.client(
    "sqs",
    endpoint_url=f"http://127.0.0.1:{port}",
    region_name="us-east-1",
    aws_access_key_id="test",
    aws_secret_access_key="test",
    config=Config(connect_timeout=2, read_timeout=2, retries={"max_attempts": 1}),
)
try:
    for name in QUEUES:
        sqs.get_queue_url(QueueName=name)
except Exception as error:
    print(f"not ready: {error}", file=sys.stderr)
    sys.exit(1)
