#!/usr/bin/env python3
"""Kafka chores of scripts/bench-partitions.sh, with confluent-kafka (one process each, where
Kafka's Java tools would start a JVM per topic):

    bench_partitions_kafka.py create BOOTSTRAP TOPIC:PARTITIONS...   create the missing topics
    bench_partitions_kafka.py records BOOTSTRAP TOPIC...             records in the topics
    bench_partitions_kafka.py fill BOOTSTRAP COUNT TOPIC...          COUNT records of 100 B
                                                                     spread over the topics
    bench_partitions_kafka.py produce BOOTSTRAP TOPIC RATE SECONDS   RATE records/s of 100 B at
                                                                     random partitions; prints
                                                                     how many
"""

import random
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create(bootstrap, specs):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = admin.list_topics(timeout=30).topics
    wanted = []
    for spec in specs:
        name, partitions = spec.rsplit(":", 1)
        if name not in existing:
            wanted.append(NewTopic(name, num_partitions=int(partitions), replication_factor=1))
    if not wanted:
        return
    for name, future in admin.create_topics(wanted).items():
        try:
            future.result(60)
        except KafkaException as error:
            sys.exit(f"creating {name}: {error}")


def partitions_of(bootstrap, topic):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-partitions"})
    metadata = consumer.list_topics(topic, timeout=30).topics[topic]
    if metadata.error is not None:
        sys.exit(f"{topic}: {metadata.error}")
    return consumer, sorted(metadata.partitions)


def records(bootstrap, topics):
    total = 0
    for topic in topics:
        consumer, partitions = partitions_of(bootstrap, topic)
        for partition in partitions:
            tp = TopicPartition(topic, partition)
            low, high = consumer.get_watermark_offsets(tp, timeout=30)
            total += high - low
        consumer.close()
    print(total)


def fill(bootstrap, count, topics):
    """Keyless records, so librdkafka's sticky partitioner makes batches of them."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "1", "batch.size": 65536}
    )
    value = b"x" * 100
    for i in range(count):
        topic = topics[i * len(topics) // count]
        while True:
            try:
                producer.produce(topic, value=value)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    if producer.flush(120) != 0:
        sys.exit("records left undelivered")


def produce(bootstrap, topic, rate, seconds):
    consumer, partitions = partitions_of(bootstrap, topic)
    consumer.close()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "1"})
    value = b"x" * 100
    total = int(rate * seconds)
    start = time.monotonic()
    for i in range(total):
        while i > (time.monotonic() - start) * rate:
            time.sleep(0.002)
        producer.produce(topic, value=value, partition=random.choice(partitions))
        producer.poll(0)
    if producer.flush(60) != 0:
        sys.exit("records left undelivered")
    print(total)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    command, bootstrap, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    if command == "create":
        create(bootstrap, rest)
    elif command == "records" and rest:
        records(bootstrap, rest)
    elif command == "fill" and len(rest) >= 2:
        fill(bootstrap, int(rest[0]), rest[1:])
    elif command == "produce" and len(rest) == 3:
        produce(bootstrap, rest[0], float(rest[1]), float(rest[2]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
