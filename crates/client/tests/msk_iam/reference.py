"""AWS's own implementations of MSK IAM signing, for crates/client/tests/msk_iam/.

Reads a JSON list of requests on stdin and writes the list of answers on stdout (one run for
all: importing botocore takes most of a second). A request is one of:
  {"op": "token", "access_key", "secret_key", "session_token", "region", "time"}
      -> {"token", "expiry_ms", "user_agent"} from aws-msk-iam-sasl-signer-python
  {"op": "verify_native", "payload", "secret_key", "region", ["time"]}
      -> {"params": {...}} botocore's SigV4QueryAuth over the same request the payload signs
  {"op": "verify_token", "token", "secret_key"}
      -> {"url": ..., "signature": ...} the token's URL, and botocore's signature for its query
"time" is seconds since the epoch: both libraries read the clock through
botocore.auth.get_current_datetime, which is frozen to it (by default, to the X-Amz-Date
signed).
"""

import base64
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


def signing_time(amz_date):
    moment = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


def verify_native(request):
    payload = json.loads(request["payload"])
    time = request.get("time") or signing_time(payload["x-amz-date"])
    access_key = payload["x-amz-credential"].split("/")[0]
    credentials = Credentials(access_key, request["secret_key"], payload.get("x-amz-security-token"))
    auth = botocore.auth.SigV4QueryAuth(credentials, "kafka-cluster", request["region"],
                                        expires=int(payload["x-amz-expires"]))
    signed = AWSRequest(method="GET", url="https://%s/" % payload["host"],
                        params={"Action": "kafka-cluster:Connect"})
    with frozen(time):
        auth.add_auth(signed)
    return {"params": {k.lower(): v for k, v in parse_qsl(urlsplit(signed.url).query)}}


def verify_token(request):
    padded = request["token"] + "=" * (-len(request["token"]) % 4)
    url = base64.urlsafe_b64decode(padded).decode()
    query = dict(parse_qsl(urlsplit(url).query))
    access_key, _date, region, _service, _ = query["X-Amz-Credential"].split("/")
    credentials = Credentials(access_key, request["secret_key"], query.get("X-Amz-Security-Token"))
    auth = botocore.auth.SigV4QueryAuth(credentials, "kafka-cluster", region, expires=int(query["X-Amz-Expires"]))
    signed = AWSRequest(method="GET", url="https://%s/" % urlsplit(url).hostname,
                        params={"Action": query["Action"]})
    with frozen(signing_time(query["X-Amz-Date"])):
        auth.add_auth(signed)
    return {"url": url, "signature": dict(parse_qsl(urlsplit(signed.url).query))["X-Amz-Signature"]}


OPERATIONS = {"token": token, "verify_native": verify_native, "verify_token": verify_token}
json.dump([OPERATIONS[request["op"]](request) for request in json.load(sys.stdin)], sys.stdout)
