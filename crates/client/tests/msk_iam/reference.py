"""AWS's own implementations of MSK IAM signing, for crates/client/tests/msk_iam/.

Reads a JSON list of requests on stdin and writes the list of answers on stdout (one run for
all: importing botocore takes most of a second). A request is one of:
  {"op": "token", "access_key", "secret_key", "session_token", "region", "time"}
      -> {"token", "expiry_ms", "user_agent"} from aws-msk-iam-sasl-signer-python
  {"op": "verify_native", "payload", "secret_key", "region", "time"}
      -> {"params": {...}} botocore's SigV4QueryAuth over the same request the payload signs
"time" is seconds since the epoch: both libraries read the clock through
botocore.auth.get_current_datetime, which is frozen to it.
"""

import datetime
import json
import sys
from unittest import mock
from urllib.parse import parse_qsl, urlsplit

import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

import aws_msk_iam_sasl_signer.MSKAuthTokenProvider as signer


def frozen(seconds):
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    return mock.patch.object(botocore.auth, "get_current_datetime", return_value=moment)


def token(request):
    credentials = Credentials(request["access_key"], request["secret_key"], request.get("session_token"))
    # The module's private signing step, so that no credential chain is consulted.
    construct = getattr(signer, "__construct_auth_token")
    with frozen(request["time"]):
        value, expiry_ms = construct(request["region"], credentials)
    return {"token": value, "expiry_ms": expiry_ms, "user_agent": getattr(signer, "__get_user_agent__")()}


def verify_native(request):
    payload = json.loads(request["payload"])
    access_key = payload["x-amz-credential"].split("/")[0]
    credentials = Credentials(access_key, request["secret_key"], payload.get("x-amz-security-token"))
    auth = botocore.auth.SigV4QueryAuth(credentials, "kafka-cluster", request["region"],
                                        expires=int(payload["x-amz-expires"]))
    signed = AWSRequest(method="GET", url="https://%s/" % payload["host"],
                        params={"Action": "kafka-cluster:Connect"})
    with frozen(request["time"]):
        auth.add_auth(signed)
    return {"params": {k.lower(): v for k, v in parse_qsl(urlsplit(signed.url).query)}}


OPERATIONS = {"token": token, "verify_native": verify_native}
json.dump([OPERATIONS[request["op"]](request) for request in json.load(sys.stdin)], sys.stdout)
