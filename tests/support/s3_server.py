"""An S3-compatible server for tests: moto's server mode on a free port of this process
(one per test process, so one per xdist worker), reached over plain HTTP like a MinIO.

Buckets and objects are made with boto3 (which moto brings) as a client would make them;
the code under test reaches the server only through its own client.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3  # type: ignore[import-untyped]
from moto.server import ThreadedMotoServer

ACCESS_KEY = "AKIATESTINGKEY000001"
SECRET_KEY = "test-secret-key-of-the-moto-server"
REGION = "us-east-1"


@dataclass(frozen=True)
class S3Server:
    endpoint: str

    def client(self) -> Any:
        """A boto3 S3 client of this server."""
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def new_bucket(self) -> str:
        """A new, empty bucket of its own for one test."""
        name = f"test-{uuid.uuid4().hex[:16]}"
        self.client().create_bucket(Bucket=name)
        return name

    def put(self, bucket: str, objects: dict[str, bytes]) -> None:
        client = self.client()
        for key, body in objects.items():
            client.put_object(Bucket=bucket, Key=key, Body=body)

    def keys(self, bucket: str) -> list[str]:
        """Every key in ``bucket``, sorted."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))


@contextmanager
def s3_server() -> Iterator[S3Server]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield S3Server(f"http://{host}:{port}")
    finally:
        server.stop()
