"""Produces Schema Registry values with the Confluent Python serializers and prints, one JSON
line per record, the value rendered in krec's documented JSON mapping (README, "Schema
Registry values"), so the Rust tests compare krec's output field by field with the producer's.

    schema_producer.py BOOTSTRAP REGISTRY_URL TOPIC KIND [COUNT]

KIND: avro (every primitive and logical type), protobuf (Order, message index 0, and Refund,
index 1), json (JSON Schema; hex values after KIND are written between two runs of the values),
bench-avro / bench-protobuf (ten-field records, COUNT of them,
nothing printed), raw (the hex values after KIND, as they are). Expected lines: {"offset": N, "value": ..., "key": ...}.
"""
import base64
import datetime
import decimal
import json
import sys
import uuid

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf import timestamp_pb2, wrappers_pb2  # noqa: F401 (registers the files)

UTC = datetime.timezone.utc

AVRO_SCHEMA = {
    "type": "record", "name": "Everything", "namespace": "krec.test",
    "fields": [
        {"name": "nothing", "type": "null"},
        {"name": "flag", "type": "boolean"},
        {"name": "small", "type": "int"},
        {"name": "big", "type": "long"},
        {"name": "ratio", "type": "float"},
        {"name": "precise", "type": "double"},
        {"name": "blob", "type": "bytes"},
        {"name": "text", "type": "string"},
        {"name": "four", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
        {"name": "numbers", "type": {"type": "array", "items": "int"}},
        {"name": "labels", "type": {"type": "map", "values": "string"}},
        {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [
            {"name": "x", "type": "int"},
            {"name": "tags", "type": {"type": "array", "items": "string"}}]}},
        {"name": "inners", "type": {"type": "array", "items": "Inner"}},
        {"name": "maybe_text", "type": ["null", "string"]},
        {"name": "choice", "type": ["null", "long", "Inner", "Color"]},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
        {"name": "fixed_amount", "type": {"type": "fixed", "name": "Money", "size": 8,
                                          "logicalType": "decimal", "precision": 18, "scale": 4}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "clock_ms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "clock_us", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "local_ms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    ],
}


def avro_values():
    base = datetime.datetime(2024, 2, 29, 13, 45, 10, 250000, tzinfo=UTC)
    for i in range(6):
        yield {
            "nothing": None, "flag": i % 2 == 0, "small": -2**31 if i == 1 else i * 7 - 3,
            "big": 2**63 - 1 if i == 2 else -i * 10**12, "ratio": 0.5 + i, "precise": -1.0 / 3 + i,
            "blob": bytes([0, 255, i]), "text": ["plain", "ünïcode ✓", "quote\" and \\ and \n", "", "tab\t", "z"][i],
            "four": bytes([i, 1, 2, 3]), "color": ["RED", "GREEN", "BLUE"][i % 3],
            "numbers": list(range(i)), "labels": {f"k{j}": f"v{j}" for j in range(i % 3)},
            "inner": {"x": i, "tags": ["a"] * (i % 2)}, "inners": [{"x": j, "tags": []} for j in range(i % 3)],
            "maybe_text": None if i % 2 else f"t{i}",
            "choice": [None, 42 + i, {"x": -i, "tags": ["c"]}, "BLUE"][i % 4],
            "amount": decimal.Decimal(i * 1000 - 2500).scaleb(-2),
            "fixed_amount": decimal.Decimal(-i * 12345 + 1).scaleb(-4),
            "id": uuid.UUID(int=i * 0x1234567890ABCDEF),
            "day": datetime.date(2024, 2, 29) + datetime.timedelta(days=i * 400 - 1000),
            "clock_ms": datetime.time(13, 45, 10, 250000 + i * 1000),
            "clock_us": datetime.time(23, 59, 59, 999999 - i),
            "at_ms": base + datetime.timedelta(milliseconds=i * 86_400_123),
            "at_us": base + datetime.timedelta(microseconds=i * 1_000_001),
            "local_ms": datetime.datetime(1969, 12, 31, 23, 59, 59, 1000 * i),
        }


def render_avro(schema, value, named):
    """The documented mapping of an Avro value, from the schema and the Python value."""
    if isinstance(schema, str):
        if schema in named:
            return render_avro(named[schema], value, named)
        if schema in ("bytes",):
            return base64.b64encode(value).decode()
        return value
    if isinstance(schema, list):
        if value is None:
            return None
        branch = pick_branch(schema, value, named)
        return render_avro(branch, value, named)
    kind, logical = schema["type"], schema.get("logicalType")
    if kind in ("record", "enum", "fixed"):
        named.setdefault(schema["name"], schema)
    if logical == "decimal":
        return format(value.quantize(decimal.Decimal(1).scaleb(-schema["scale"])), "f")
    if logical == "uuid":
        return str(value)
    if logical == "date":
        return value.isoformat()
    if logical == "time-millis":
        return value.isoformat(timespec="milliseconds")
    if logical == "time-micros":
        return value.isoformat(timespec="microseconds")
    if logical in ("timestamp-millis", "timestamp-micros"):
        spec = "milliseconds" if logical.endswith("millis") else "microseconds"
        return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec=spec) + "Z"
    if logical == "local-timestamp-millis":
        return value.isoformat(timespec="milliseconds")
    if kind == "record":
        return {f["name"]: render_avro(f["type"], value[f["name"]], named) for f in schema["fields"]}
    if kind == "array":
        return [render_avro(schema["items"], item, named) for item in value]
    if kind == "map":
        return {k: render_avro(schema["values"], v, named) for k, v in value.items()}
    if kind == "fixed":
        return base64.b64encode(value).decode()
    return render_avro(kind, value, named)


def pick_branch(branches, value, named):
    for branch in branches:
        resolved = named.get(branch, branch) if isinstance(branch, str) else branch
        kind = resolved if isinstance(resolved, str) else resolved["type"]
        if kind == "long" and isinstance(value, int) and not isinstance(value, bool):
            return branch
        if kind == "string" and isinstance(value, str) and not (isinstance(resolved, dict)):
            return branch
        if kind == "record" and isinstance(value, dict):
            return branch
        if kind == "enum" and isinstance(value, str) and value in resolved["symbols"]:
            return branch
    raise ValueError(f"no branch for {value!r}")


def protobuf_classes():
    """Order (nested message, enum, repeated, map, oneof, well-known types) and Refund."""
    F = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="krec_test.proto", package="krec.test", syntax="proto3",
        dependency=["google/protobuf/timestamp.proto", "google/protobuf/wrappers.proto"])
    order = file.message_type.add(name="Order")
    order.enum_type.add(name="Status").value.extend([
        descriptor_pb2.EnumValueDescriptorProto(name="UNKNOWN", number=0),
        descriptor_pb2.EnumValueDescriptorProto(name="NEW", number=1),
        descriptor_pb2.EnumValueDescriptorProto(name="SHIPPED", number=2)])
    line = order.nested_type.add(name="Line")
    line.field.add(name="sku", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, json_name="sku")
    line.field.add(name="quantity", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL, json_name="quantity")
    entry = order.nested_type.add(name="CountsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, json_name="key")
    entry.field.add(name="value", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL, json_name="value")
    order.oneof_decl.add(name="payment")
    fields = [
        ("order_id", 1, F.TYPE_STRING, None, F.LABEL_OPTIONAL, "orderId"),
        ("total_cents", 2, F.TYPE_INT64, None, F.LABEL_OPTIONAL, "totalCents"),
        ("price", 3, F.TYPE_DOUBLE, None, F.LABEL_OPTIONAL, "price"),
        ("paid", 4, F.TYPE_BOOL, None, F.LABEL_OPTIONAL, "paid"),
        ("status", 5, F.TYPE_ENUM, ".krec.test.Order.Status", F.LABEL_OPTIONAL, "status"),
        ("lines", 6, F.TYPE_MESSAGE, ".krec.test.Order.Line", F.LABEL_REPEATED, "lines"),
        ("counts", 7, F.TYPE_MESSAGE, ".krec.test.Order.CountsEntry", F.LABEL_REPEATED, "counts"),
        ("card", 8, F.TYPE_STRING, None, F.LABEL_OPTIONAL, "card"),
        ("token", 9, F.TYPE_BYTES, None, F.LABEL_OPTIONAL, "token"),
        ("created", 10, F.TYPE_MESSAGE, ".google.protobuf.Timestamp", F.LABEL_OPTIONAL, "created"),
        ("discount", 11, F.TYPE_MESSAGE, ".google.protobuf.Int32Value", F.LABEL_OPTIONAL, "discount"),
        ("tags", 12, F.TYPE_STRING, None, F.LABEL_REPEATED, "tags"),
        ("delta", 13, F.TYPE_SINT64, None, F.LABEL_OPTIONAL, "delta"),
        ("weight", 14, F.TYPE_FLOAT, None, F.LABEL_OPTIONAL, "weight"),
        ("count", 15, F.TYPE_UINT32, None, F.LABEL_OPTIONAL, "count"),
    ]
    for name, number, kind, type_name, label, json_name in fields:
        field = order.field.add(name=name, number=number, type=kind, label=label, json_name=json_name)
        if type_name:
            field.type_name = type_name
        if name in ("card", "token"):
            field.oneof_index = 0
    refund = file.message_type.add(name="Refund")
    refund.field.add(name="order_id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, json_name="orderId")
    refund.field.add(name="amount", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL, json_name="amount")
    pool = descriptor_pool.Default()
    pool.Add(file)
    get = lambda name: message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
    return get("krec.test.Order"), get("krec.test.Refund")


def protobuf_values(order_class, refund_class):
    for i in range(6):
        if i % 3 == 2:
            yield refund_class(order_id=f"o{i}", amount=-(2**40) - i)
            continue
        order = order_class(order_id=f"o{i}", total_cents=2**53 + i, price=19.25 * i, paid=i % 2 == 0,
                            status=i % 3, tags=["x"] * i, delta=-i, weight=0.5 * i, count=i)
        for j in range(i):
            order.lines.add(sku=f"s{j}", quantity=j + 1)
        for j in range(i % 3):
            order.counts[f"c{j}"] = j * 10
        if i % 2:
            order.card = "4111"
        else:
            order.token = bytes([i, 0, 255])
        order.created.FromDatetime(datetime.datetime(2024, 1, 2, 3, 4, 5, i * 1000))
        if i:
            order.discount.value = i * 5
        yield order


JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Event", "type": "object",
    "properties": {"name": {"type": "string"}, "n": {"type": "integer"},
                   "tags": {"type": "array", "items": {"type": "string"}}, "extra": {"type": ["object", "null"]}},
    "required": ["name", "n"],
}


def json_values():
    for i in range(4):
        yield {"name": f"e{i} ✓", "n": i * 1000, "tags": ["a", "b\n"][: i % 3], "extra": None if i % 2 else {"deep": [i, {"x": i / 4}]}}


def bench_avro_schema():
    return {"type": "record", "name": "Tick", "fields": [
        {"name": "id", "type": "long"}, {"name": "account", "type": "string"},
        {"name": "symbol", "type": "string"}, {"name": "price", "type": "double"},
        {"name": "quantity", "type": "int"}, {"name": "side", "type": {"type": "enum", "name": "Side", "symbols": ["BUY", "SELL"]}},
        {"name": "venue", "type": ["null", "string"]}, {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "note", "type": "string"}, {"name": "flags", "type": {"type": "array", "items": "int"}}]}


def bench_value(i):
    return {"id": i, "account": f"acct-{i % 1000:06d}", "symbol": ["AAPL", "MSFT", "GOOG"][i % 3],
            "price": 100 + i % 1000 / 8, "quantity": i % 500, "side": ["BUY", "SELL"][i % 2],
            "venue": None if i % 5 == 0 else "XNAS",
            "at": datetime.datetime(2024, 1, 1, tzinfo=UTC) + datetime.timedelta(milliseconds=i),
            "note": "n" * (60 + i % 40), "flags": [i % 7, i % 11, 3]}


def main():
    bootstrap, registry_url, topic, kind = sys.argv[1:5]
    count = int(sys.argv[5]) if len(sys.argv) > 5 and kind.startswith("bench") else 0
    registry = SchemaRegistryClient({"url": registry_url})
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "compression.type": "lz4" if kind.startswith("bench") else "none"})
    context = SerializationContext(topic, MessageField.VALUE)
    expected = []
    if kind == "avro":
        serializer = AvroSerializer(registry, json.dumps(AVRO_SCHEMA))
        for value in avro_values():
            expected.append(render_avro(AVRO_SCHEMA, value, {}))
            producer.produce(topic, value=serializer(value, context), partition=0)
    elif kind == "protobuf":
        order_class, refund_class = protobuf_classes()
        conf = {"use.deprecated.format": False}
        serializers = {cls: ProtobufSerializer(cls, registry, conf) for cls in (order_class, refund_class)}
        for value in protobuf_values(order_class, refund_class):
            expected.append(json_format.MessageToDict(value))
            producer.produce(topic, value=serializers[type(value)](value, context), partition=0)
    elif kind == "json":
        # Hex values in argv[5:] go between two runs of the values: one process, so the
        # schema is registered once (a second registration races in the registry).
        serializer = JSONSerializer(json.dumps(JSON_SCHEMA), registry)
        for raws in [sys.argv[5:], []] if len(sys.argv) > 5 else [[]]:
            for value in json_values():
                expected.append(value)
                producer.produce(topic, value=serializer(value, context), partition=0)
            for raw in raws:
                expected.append(None)
                producer.produce(topic, value=bytes.fromhex(raw), partition=0)
    elif kind == "raw":
        # The values as given in hex (argv[5:]), for framing and schema errors.
        for value in sys.argv[5:]:
            producer.produce(topic, value=bytes.fromhex(value), partition=0)
        count = 0
    elif kind == "bench-avro":
        serializer = AvroSerializer(registry, json.dumps(bench_avro_schema()))
        for i in range(count):
            producer.produce(topic, value=serializer(bench_value(i), context), partition=0)
            if i % 10000 == 0:
                producer.poll(0)
    elif kind == "bench-protobuf":
        order_class, _ = protobuf_classes()
        serializer = ProtobufSerializer(order_class, registry, {"use.deprecated.format": False})
        for value_index in range(count):
            i = value_index
            order = order_class(order_id=f"order-{i:08d}", total_cents=i * 37, price=i / 8, paid=i % 2 == 0,
                                status=i % 3, tags=["web", "eu"], delta=-i, weight=1.5, count=i % 100)
            order.lines.add(sku=f"sku-{i % 977}", quantity=i % 9)
            order.counts["items"] = i % 13
            order.card = "4111-xxxx"
            order.created.FromMilliseconds(1_700_000_000_000 + i)
            producer.produce(topic, value=serializer(order, context), partition=0)
            if i % 10000 == 0:
                producer.poll(0)
    else:
        raise SystemExit(f"unknown kind {kind}")
    if producer.flush(60) != 0:
        raise SystemExit("records left unsent")
    for offset, value in enumerate(expected):
        if value is not None:
            print(json.dumps({"offset": offset, "value": value}))


if __name__ == "__main__":
    main()
