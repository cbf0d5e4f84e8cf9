#!/bin/sh
# LocalStack runs this when it is ready: the queues of the pipeline and their dead-letter queue,
# with the attributes the components give the queues they create (shared/adapters/sqs_queue.py):
# 14 days' retention, messages of up to 1 MiB, and on both work queues a redrive policy to the
# dead-letter queue after SCHEDULER_MAX_RECEIVES (20) receives.
set -e
limits='"MessageRetentionPeriod":"1209600","MaximumMessageSize":"1048576"'
awslocal sqs create-queue --queue-name scheduler-dead-letters --attributes "{$limits}"
dlq_arn=$(awslocal sqs get-queue-attributes \
  --queue-url http://localhost:4566/000000000000/scheduler-dead-letters \
  --attribute-names QueueArn --query Attributes.QueueArn --output text)
redrive="{\\\"deadLetterTargetArn\\\":\\\"$dlq_arn\\\",\\\"maxReceiveCount\\\":20}"
for queue in scheduler-mutations scheduler-occurrences; do
  awslocal sqs create-queue --queue-name "$queue" \
    --attributes "{$limits,\"RedrivePolicy\":\"$redrive\"}"
done
