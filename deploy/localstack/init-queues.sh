#!/bin/sh
# LocalStack runs this when it is ready: the queues of the pipeline and their dead-letter queue.
set -e
awslocal sqs create-queue --queue-name scheduler-dead-letters
dlq_arn=$(awslocal sqs get-queue-attributes \
  --queue-url http://localhost:4566/000000000000/scheduler-dead-letters \
  --attribute-names QueueArn --query Attributes.QueueArn --output text)
for queue in scheduler-mutations scheduler-occurrences; do
  awslocal sqs create-queue --queue-name "$queue" \
    --attributes "{\"RedrivePolicy\":\"{\\\"deadLetterTargetArn\\\":\\\"$dlq_arn\\\",\\\"maxReceiveCount\\\":\\\"20\\\"}\"}"
done
