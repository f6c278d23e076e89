"""Decodes Confluent-framed values with the Confluent Python deserializers and prints each as
one JSON line, so the Rust tests compare what the Python clients read with what krec wrote.

    confluent_decode.py REGISTRY_URL avro|json
    confluent_decode.py REGISTRY_URL protobuf DESCRIPTOR_SET_BASE64 MESSAGE_FULL_NAME

stdin: one hex-encoded framed value per line. Avro and JSON Schema values are read with the
schema the registry holds for their id; Protobuf ones as the named message of the
FileDescriptorSet (the Python deserializer needs a message class, not the registry).
Rendering: bytes as a string of code points U+0000..U+00FF (Avro's JSON notation), decimals
as strings, dates and times in ISO 8601, Protobuf messages in the proto3 JSON mapping.
"""
import base64
import datetime
import decimal
import json
import sys
import uuid

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory


def plain(value):
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def message_class(descriptor_set_base64, full_name):
    files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(descriptor_set_base64))
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name))


def main():
    url, kind = sys.argv[1], sys.argv[2]
    client = SchemaRegistryClient({"url": url})
    if kind == "avro":
        deserializer, render = AvroDeserializer(client), plain
    elif kind == "json":
        deserializer, render = JSONDeserializer(None, schema_registry_client=client), plain
    elif kind == "protobuf":
        cls = message_class(sys.argv[3], sys.argv[4])
        deserializer = ProtobufDeserializer(cls, {"use.deprecated.format": False})
        render = json_format.MessageToDict
    else:
        sys.exit(f"unknown kind {kind}")
    context = SerializationContext("krec-schemaenc", MessageField.VALUE)
    for line in sys.stdin:
        value = deserializer(bytes.fromhex(line.strip()), context)
        print(json.dumps(render(value), sort_keys=True))


if __name__ == "__main__":
    main()
