#!/usr/bin/env python3
"""What an S3-compatible server supports of what `krec backup` needs: `s3.sh check --name N`.

Runs with the venv of scripts/s3.sh (boto3) and the client environment `s3.sh env` prints
(AWS_ENDPOINT_URL and the test keys). In a bucket of its own, checks:
  - conditional PUT: If-None-Match: * creates a key once, then 412 (a manifest written once);
    If-Match: ETAG replaces it only while the ETag is current, then 412 (a manifest updated);
  - multipart upload: parts of 5 MiB and a last small one, completed, read back equal (a
    segment in one piece); an aborted upload leaves no key;
  - a completed multipart upload with If-None-Match: * on an existing key.
Prints one line per check ("ok" or "NOT SUPPORTED: ...") and exits 1 if a required one failed.
"""

import sys
import uuid

import boto3
from botocore.exceptions import ClientError

s3 = boto3.client("s3")
bucket = "krec-s3-check-" + uuid.uuid4().hex[:12]
failed = []


def status_of(error):
    return error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")


def check(name, required, function):
    try:
        function()
        print(f"ok: {name}")
    except Exception as error:  # a check that fails says why, and the others still run
        print(f"NOT SUPPORTED: {name}: {error}")
        if required:
            failed.append(name)


def expect_412(function):
    try:
        function()
    except ClientError as error:
        if status_of(error) == 412:
            return
        raise AssertionError(f"expected 412, got {status_of(error)}: {error}") from error
    raise AssertionError("expected 412 Precondition Failed, the request succeeded")


def if_none_match():
    s3.put_object(Bucket=bucket, Key="manifest.json", Body=b"first", IfNoneMatch="*")
    expect_412(lambda: s3.put_object(Bucket=bucket, Key="manifest.json", Body=b"second", IfNoneMatch="*"))
    body = s3.get_object(Bucket=bucket, Key="manifest.json")["Body"].read()
    assert body == b"first", f"the refused PUT changed the object: {body!r}"


def if_match():
    etag = s3.head_object(Bucket=bucket, Key="manifest.json")["ETag"]
    s3.put_object(Bucket=bucket, Key="manifest.json", Body=b"third", IfMatch=etag)
    expect_412(lambda: s3.put_object(Bucket=bucket, Key="manifest.json", Body=b"fourth", IfMatch=etag))
    body = s3.get_object(Bucket=bucket, Key="manifest.json")["Body"].read()
    assert body == b"third", f"the refused PUT changed the object: {body!r}"


PARTS = [bytes([65 + i]) * (5 << 20) for i in range(2)] + [b"tail"]


def upload(key, **complete_args):
    upload_id = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    done = []
    for number, data in enumerate(PARTS, start=1):
        etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=data)["ETag"]
        done.append({"ETag": etag, "PartNumber": number})
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id,
                                 MultipartUpload={"Parts": done}, **complete_args)


def multipart():
    upload("segment.log")
    body = s3.get_object(Bucket=bucket, Key="segment.log")["Body"].read()
    assert body == b"".join(PARTS), "the completed upload reads back different bytes"


def multipart_abort():
    upload_id = s3.create_multipart_upload(Bucket=bucket, Key="aborted.log")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="aborted.log", UploadId=upload_id, PartNumber=1, Body=PARTS[0])
    s3.abort_multipart_upload(Bucket=bucket, Key="aborted.log", UploadId=upload_id)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert "aborted.log" not in keys, "an aborted upload left its key"


def multipart_if_none_match():
    expect_412(lambda: upload("segment.log", IfNoneMatch="*"))


s3.create_bucket(Bucket=bucket)
check("PUT If-None-Match: * (create once, then 412)", True, if_none_match)
check("PUT If-Match: ETAG (replace while current, then 412)", True, if_match)
check("multipart upload (5 MiB parts, completed, read back)", True, multipart)
check("multipart upload aborted (no key left)", True, multipart_abort)
check("multipart complete with If-None-Match: * on an existing key (412)", False, multipart_if_none_match)
if failed:
    sys.exit(f"s3_check: not supported: {', '.join(failed)}")
