#!/usr/bin/env python3
"""Kafka chores of scripts/bench-mirror.sh, with confluent-kafka (librdkafka), one process each:

    bench_mirror_kafka.py count BOOTSTRAP TOPIC             records a read_committed consumer
                                                            reads from TOPIC, beginning to end
    bench_mirror_kafka.py wait BOOTSTRAP TOPIC COUNT SECS   consumes TOPIC (read_committed) as
                                                            it fills until COUNT records were
                                                            read; prints the epoch time then
                                                            (exit 3 after SECS without them)
    bench_mirror_kafka.py delete BOOTSTRAP TOPIC...         deletes the topics that exist and
                                                            waits until metadata no longer
                                                            lists them

Records are counted by reading them, not from end offsets: a transactional copy (MirrorMaker 2
with exactly-once, krec mirror) leaves a commit marker per partition and transaction, which
takes an offset but is no record.
"""

import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

# Records handed over per consume call: large, so the Python loop costs little per record.
BATCH = 10000
# librdkafka's warnings and errors only: its notices at exit are noise in the benchmark's log.
LOG_LEVEL = 4


def consumer_of(bootstrap):
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "log_level": LOG_LEVEL,
            "group.id": "bench-mirror-count",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            # Values are not looked at: only counted.
            "fetch.max.bytes": 52428800,
        }
    )


def partitions_of(consumer, topic, timeout_s):
    """The topic's partitions, or [] while it does not exist yet."""
    metadata = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
    if metadata is None or metadata.error is not None:
        return []
    return sorted(metadata.partitions)


def consume_counting(consumer, stop):
    """Counts records until stop(count, partitions_at_eof) says enough; returns the count."""
    count, at_eof = 0, set()
    while not stop(count, at_eof):
        for message in consumer.consume(BATCH, timeout=0.2):
            error = message.error()
            if error is None:
                count += 1
                at_eof.discard(message.partition())
            elif error.code() == KafkaError._PARTITION_EOF:
                at_eof.add(message.partition())
            else:
                sys.exit(f"consuming {message.topic()}: {error}")
    return count


def count(bootstrap, topic):
    consumer = consumer_of(bootstrap)
    partitions = partitions_of(consumer, topic, 30)
    if not partitions:
        sys.exit(f"{topic}: no such topic at {bootstrap}")
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    print(consume_counting(consumer, lambda _, at_eof: len(at_eof) == len(partitions)))
    consumer.close()


def wait(bootstrap, topic, wanted, seconds):
    deadline = time.monotonic() + seconds
    consumer = consumer_of(bootstrap)
    # The copying tool creates the topic: wait for it, then read all its partitions.
    while not (partitions := partitions_of(consumer, topic, 5)):
        if time.monotonic() > deadline:
            sys.exit(3)
        time.sleep(0.2)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    got = consume_counting(consumer, lambda n, _: n >= wanted or time.monotonic() > deadline)
    reached = time.time()
    consumer.close()
    if got < wanted:
        print(f"{topic}: {got} of {wanted} records after {seconds} s", file=sys.stderr)
        sys.exit(3)
    print("%.3f" % reached)


def delete(bootstrap, topics):
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": LOG_LEVEL})
    existing = [t for t in topics if t in admin.list_topics(timeout=30).topics]
    if not existing:
        return
    for future in admin.delete_topics(existing, operation_timeout=30).values():
        future.result(60)
    deadline = time.monotonic() + 60
    while any(t in admin.list_topics(timeout=30).topics for t in existing):
        if time.monotonic() > deadline:
            sys.exit(f"topics {existing} still listed 60 s after their deletion")
        time.sleep(0.2)


def main(args):
    if args[:1] == ["count"] and len(args) == 3:
        count(args[1], args[2])
    elif args[:1] == ["wait"] and len(args) == 5:
        wait(args[1], args[2], int(args[3]), float(args[4]))
    elif args[:1] == ["delete"] and len(args) >= 3:
        delete(args[1], args[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
