"""Run by LocalStack once it is ready (an init hook of its ``ready.d``): the queues of the
pipeline and their dead-letter queue, with the attributes the components give the queues they
create (``shared/adapters/sqs_queue.py``): 14 days' retention, messages of up to 1 MiB, and on
both work queues a redrive policy to the dead-letter queue after 20 receives
(SCHEDULER_MAX_RECEIVES). The components would make them too; made here, compose can wait for
them (``healthcheck.py``).
"""

import json

import boto3
from localstack import config

QUEUES = ("scheduler-mutations", "scheduler-occurrences")
DEAD_LETTERS = "scheduler-dead-letters"
MAX_RECEIVES = 20
LIMITS = {"MessageRetentionPeriod": "1209600", "MaximumMessageSize": "1048576"}

sqs = boto3.client(
    "sqs",
    endpoint_url=config.internal_service_url(),
    region_name="us-east-1",
    aws_access_key_id="test",
    aws_secret_access_key="test",
)
dead_letters = sqs.create_queue(QueueName=DEAD_LETTERS, Attributes=LIMITS)["QueueUrl"]
arn = sqs.get_queue_attributes(QueueUrl=dead_letters, AttributeNames=["QueueArn"])
redrive = {"deadLetterTargetArn": arn["Attributes"]["QueueArn"], "maxReceiveCount": MAX_RECEIVES}
for name in QUEUES:
    sqs.create_queue(QueueName=name, Attributes={**LIMITS, "RedrivePolicy": json.dumps(redrive)})
