"""Shared pytest fixtures.

``s3_server``: moto's S3-compatible server (``moto_server``, beside the
running Python) on a free loopback port for the test module, with a bucket
``data`` made, the AWS environment pointed at it (fake keys, no instance
metadata) and sluice's clients made again to see it. Skips when this build
has no object stores or moto is not installed.
"""
import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    def __init__(self, proc, port):
        self.proc = proc
        self.port = port
        self.endpoint_url = f"http://127.0.0.1:{port}"

    def create_bucket(self, name):
        req = urllib.request.Request(f"{self.endpoint_url}/{name}", method="PUT", data=b"")
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200


@contextlib.contextmanager
def moto_server(env=None):
    """moto_server on a free loopback port, answering, until the block ends
    (then killed). Skips when this build has no object stores or moto is not
    installed. ``env``: extra environment for the server."""
    from sluice import io as sio
    if not sio.remote_filesystems_available():
        pytest.skip("this build has no object stores (no Arrow C++)")
    moto = os.path.join(os.path.dirname(sys.executable), "moto_server")
    if not os.path.exists(moto):
        pytest.skip("no moto_server beside " + sys.executable)
    port = _free_port()
    proc = subprocess.Popen([moto, "-H", "127.0.0.1", "-p", str(port)],
                            env=dict(os.environ, **(env or {})),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = S3Server(proc, port)
    try:
        # moto's own API: not an S3 call (it would count against
        # INITIAL_NO_AUTH_ACTION_COUNT).
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(server.endpoint_url + "/moto-api/", timeout=2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("moto_server did not start")
                time.sleep(0.1)
        yield server
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def aws_environment(**values):
    """The AWS variables set to ``values`` (fake keys, no instance metadata,
    a region) and sluice's clients made again to see them, until the block
    ends; then both as they were."""
    from sluice import io as sio
    values = {"AWS_EC2_METADATA_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1", **values}
    keys = set(values) | {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_S3"}
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(values)
    sio.reset_remote_options()  # new clients read the environment
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        sio.reset_remote_options()


@pytest.fixture(scope="module")
def s3_server():
    with moto_server() as server, aws_environment(
            AWS_ACCESS_KEY_ID="sluice-test-key", AWS_SECRET_ACCESS_KEY="sluice-test-secret",
            AWS_ENDPOINT_URL_S3=server.endpoint_url):
        server.create_bucket("data")
        yield server
