"""The SQS region: the queue URL's, else SCHEDULER_AWS_REGION, else the AWS SDKs' variables."""

from __future__ import annotations

import pytest

from shared.settings import Settings


@pytest.mark.parametrize(
    ("environ", "region"),
    [
        ({}, "us-east-1"),
        ({"AWS_DEFAULT_REGION": "eu-west-1"}, "eu-west-1"),
        ({"AWS_REGION": "ap-south-1", "AWS_DEFAULT_REGION": "eu-west-1"}, "ap-south-1"),
        ({"AWS_REGION": "", "AWS_DEFAULT_REGION": "eu-west-1"}, "eu-west-1"),
        ({"SCHEDULER_AWS_REGION": "us-west-2", "AWS_REGION": "ap-south-1"}, "us-west-2"),
    ],
)
def test_the_region_comes_from_the_aws_variables_when_ours_is_unset(
    environ: dict[str, str], region: str
) -> None:
    assert Settings.from_env(environ).aws_region == region
