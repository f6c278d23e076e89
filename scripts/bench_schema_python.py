"""The Confluent Python deserializer on a whole topic, as people use it when kcat lacks Avro:
each value deserialized (AvroDeserializer / ProtobufDeserializer) and printed as a JSON line.

    bench_schema_python.py BOOTSTRAP REGISTRY_URL TOPIC avro|protobuf COUNT
"""
import json
import sys
import uuid

from confluent_kafka import Consumer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext


def main():
    bootstrap, registry_url, topic, kind, count = sys.argv[1:6]
    count = int(count)
    registry = SchemaRegistryClient({"url": registry_url})
    if kind == "avro":
        deserialize = AvroDeserializer(registry)
        render = lambda value: json.dumps(value, default=str)
    else:
        sys.path.insert(0, sys.path[0] + "/../crates/cli/tests/support")
        from google.protobuf import json_format
        from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
        import schema_producer
        order_class, _ = schema_producer.protobuf_classes()
        deserialize = ProtobufDeserializer(order_class, {"use.deprecated.format": False})
        render = lambda value: json.dumps(json_format.MessageToDict(value))
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    context = SerializationContext(topic, MessageField.VALUE)
    out = sys.stdout
    seen = 0
    while seen < count:
        for message in consumer.consume(1000, 5.0):
            if message.error():
                raise SystemExit(str(message.error()))
            out.write(render(deserialize(message.value(), context)))
            out.write("\n")
            seen += 1
    consumer.close()


if __name__ == "__main__":
    main()
