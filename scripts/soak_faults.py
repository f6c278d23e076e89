#!/usr/bin/env python3
"""The driver of scripts/soak-faults.sh (not run in CI): cycling network and broker faults on a
proxied three-node cluster while a producer keeps writing numbered records and a group of krec
members consumes them through the proxies; a verifier then checks that every acknowledged
record was written out by some member.

    soak_faults.py KREC KAFKA_SH INSTANCE MINUTES WORKDIR

Prints one line per fault (its recovery time) and a final report; exits 1 if a record was
lost, a member died, or a recovery took longer than the bound.
"""
import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request

RECOVERY_BOUND_S = 120
RATE = 500.0
PARTITIONS = 6
MEMBERS = 3
REQUEST_TIMEOUT_MS = 5000

PRODUCER = r"""
import sys, time, threading
from confluent_kafka import Producer
bootstrap, topic, partitions, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True,
              "acks": "all", "message.timeout.ms": 600000})
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
def report(err, msg):
    if err is not None:
        sys.exit("delivery failed: %s" % err)
    sys.stdout.write("%d %d %s\n" % (msg.partition(), msg.offset(), msg.value()[:msg.value().index(b" ")].decode()))
    sys.stdout.flush()
start, i = time.time(), 0
while not stop.is_set():
    p.produce(topic, value=b"seq-%d %s" % (i, b"x" * 100), partition=i % partitions, on_delivery=report)
    p.poll(0)
    i += 1
    ahead = start + i / rate - time.time()
    if ahead > 0:
        time.sleep(ahead)
if p.flush(300) != 0:
    sys.exit("records left unacknowledged")
"""


def kafka_sh(kafka, instance, *args):
    return subprocess.run(["bash", kafka, args[0], "--name", instance, *args[1:]], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()


def api(address, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request("http://%s%s" % (address, path), data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.read()


class Tail:
    """The (partition, offset) of each complete `partition offset seq-N ...` line of a growing
    file, read incrementally so that checking stays cheap as the files grow."""

    def __init__(self, path):
        self.path, self.done, self.lines = path, 0, []

    def read(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.done)
                data = f.read()
        except FileNotFoundError:
            return self.lines
        data = data[: data.rfind(b"\n") + 1]
        self.done += len(data)
        for line in data.splitlines():
            fields = line.split(b" ")
            self.lines.append((int(fields[0]), int(fields[1])))
        return self.lines


class Soak:
    def __init__(self, krec, kafka, instance, workdir):
        self.krec, self.kafka, self.instance, self.workdir = krec, kafka, instance, workdir
        env = dict(line.split("=", 1) for line in open(kafka_sh(kafka, instance, "proxy-env")).read().split())
        self.api = env["TOXIPROXY_API"]
        self.lane = env["LANE1"]
        self.proxies = env["LANE1_PROXIES"].split(",")
        self.admin = kafka_sh(kafka, instance, "bootstrap")
        self.topic = "soak-%d" % int(time.time())
        self.members = []

    def start(self):
        kafka_sh(self.kafka, self.instance, "topic", "create", self.topic, "--partitions", str(PARTITIONS),
                 "--replication-factor", "3")
        time.sleep(2)
        self.acks_path = os.path.join(self.workdir, "acks")
        self.producer = subprocess.Popen(
            ["/usr/bin/python3", "-c", PRODUCER, self.admin, self.topic, str(PARTITIONS), str(RATE)],
            stdin=subprocess.PIPE, stdout=open(self.acks_path, "wb"),
            stderr=open(os.path.join(self.workdir, "producer.err"), "wb"))
        for i in range(MEMBERS):
            out = os.path.join(self.workdir, "m%d.out" % i)
            err = os.path.join(self.workdir, "m%d.err" % i)
            child = subprocess.Popen(
                [self.krec, "consume", "-b", self.lane, "-t", self.topic, "-G", self.topic + "-g",
                 "-f", "%p %o %s\\n", "--threads", "1", "--session-timeout-ms", "10000",
                 "--heartbeat-interval-ms", "1000", "--commit-interval-ms", "1000",
                 "-X", "request.timeout.ms=%d" % REQUEST_TIMEOUT_MS],
                stdin=subprocess.DEVNULL, stdout=open(out, "wb"), stderr=open(err, "wb"),
                env=dict(os.environ, RUST_LOG="warn,krec_consumer::group=info"))
            self.members.append((child, Tail(out)))
        self.acks = Tail(self.acks_path)
        self.counts, self.counted = {}, [0] * MEMBERS

    def printed(self):
        """How often each position was written out, over all members."""
        for i, (_, tail) in enumerate(self.members):
            lines = tail.read()
            for position in lines[self.counted[i]:]:
                self.counts[position] = self.counts.get(position, 0) + 1
            self.counted[i] = len(lines)
        return self.counts

    def repeats(self):
        """Records written more than once so far, counted once per extra write."""
        return sum(n - 1 for n in self.printed().values() if n > 1)

    def acked(self):
        return set(self.acks.read())

    def check_members(self):
        for i, (child, _) in enumerate(self.members):
            if child.poll() is not None:
                sys.exit("soak: member m%d exited with %s (log %s/m%d.err)" % (i, child.returncode, self.workdir, i))

    def wait_caught_up(self, wanted, bound):
        started = time.time()
        while True:
            self.check_members()
            printed = self.printed()
            missing = sum(1 for position in wanted if position not in printed)
            if missing == 0:
                return time.time() - started
            if time.time() - started > bound:
                return None
            time.sleep(0.2)

    def toxics(self, toxics, prefix="t"):
        for proxy in self.proxies:
            for i, (kind, stream, attributes) in enumerate(toxics):
                api(self.api, "POST", "/proxies/%s/toxics" % proxy,
                    {"name": "%s%d" % (prefix, i), "type": kind, "stream": stream, "toxicity": 1.0,
                     "attributes": attributes})

    def reset(self):
        # Last added first: Toxiproxy 2.5 can hang removing a toxic whose successor in the
        # chain stopped reading (its issue 558), which POST /reset does in no set order.
        for proxy in self.proxies:
            toxics = json.loads(api(self.api, "GET", "/proxies/%s/toxics" % proxy))
            for toxic in reversed(toxics):
                api(self.api, "DELETE", "/proxies/%s/toxics/%s" % (proxy, toxic["name"]))

    def repeated_resets(self, hold):
        # reset_peer with timeout 0 resets at the next segment: in the middle of a response
        # that the bandwidth limit keeps streaming.
        self.toxics([("bandwidth", "downstream", {"rate": 48})])
        until = time.time() + hold
        while time.time() < until:
            self.toxics([("reset_peer", "downstream", {"timeout": 0})], prefix="reset")
            time.sleep(0.3)
            for proxy in self.proxies:
                api(self.api, "DELETE", "/proxies/%s/toxics/reset0" % proxy)
            time.sleep(0.9)

    def set_enabled(self, enabled):
        for proxy in self.proxies:
            api(self.api, "POST", "/proxies/%s" % proxy, {"enabled": enabled})

    def freeze(self, node, hold):
        pid = kafka_sh(self.kafka, self.instance, "pid", "--node", str(node))
        os.kill(int(pid), signal.SIGSTOP)
        try:
            time.sleep(hold)
        finally:
            os.kill(int(pid), signal.SIGCONT)

    def faults(self):
        """(name, hold seconds, apply, lift) in cycle order."""
        tox = lambda *t: (lambda: self.toxics(list(t)))
        return [
            ("latency", 10, tox(("latency", "downstream", {"latency": 400, "jitter": 300})), self.reset),
            ("bandwidth", 10, tox(("bandwidth", "downstream", {"rate": 32})), self.reset),
            ("slicer", 10, tox(("slicer", "downstream", {"average_size": 8, "size_variation": 6, "delay": 20})),
             self.reset),
            ("reset_peer", 10, None, self.reset),
            ("timeout", 12, tox(("timeout", "downstream", {"timeout": 0})), self.reset),
            ("limit_data", 10, tox(("limit_data", "downstream", {"bytes": 60000})), self.reset),
            ("disabled", 15, lambda: self.set_enabled(False), lambda: self.set_enabled(True)),
            ("sigstop", 12, None, None),
        ]

    def run(self, minutes):
        deadline = time.time() + minutes * 60
        recoveries = []
        time.sleep(10)
        cycle = self.faults()
        i = 0
        while time.time() < deadline:
            name, hold, apply, lift = cycle[i % len(cycle)]
            i += 1
            repeated_before = self.repeats()
            started = time.time()
            if name == "sigstop":
                node = random.randint(1, 3)
                name = "sigstop node %d" % node
                self.freeze(node, hold)
            elif name == "reset_peer":
                self.repeated_resets(hold)
                lift()
            else:
                apply()
                time.sleep(hold)
                lift()
            held = time.time() - started
            wanted = self.acked()
            recovery = self.wait_caught_up(wanted, RECOVERY_BOUND_S)
            if recovery is None:
                sys.exit("soak: not caught up %d s after fault %s" % (RECOVERY_BOUND_S, name))
            recoveries.append((name, recovery))
            time.sleep(5)
            # Repeats settle within the pause: a rebalance after the fault rewrites from the
            # last commits at once.
            print("soak: fault %-16s held %2d s, caught up %5.1f s after it ended, %5d repeats"
                  % (name, held, recovery, self.repeats() - repeated_before), flush=True)
        return recoveries

    def finish(self):
        self.producer.stdin.close()
        if self.producer.wait(timeout=600) != 0:
            sys.exit("soak: producer failed: %s" % open(os.path.join(self.workdir, "producer.err")).read())
        acked = self.acked()
        self.wait_caught_up(acked, RECOVERY_BOUND_S)
        for child, _ in self.members:
            child.send_signal(signal.SIGTERM)
        for child, _ in self.members:
            child.wait(timeout=60)
        return acked, self.printed()


def main():
    krec, kafka, instance, minutes, workdir = sys.argv[1:6]
    soak = Soak(krec, kafka, instance, workdir)
    soak.start()
    recoveries = soak.run(float(minutes))
    acked, printed = soak.finish()
    lost = acked - set(printed)
    unknown = set(printed) - acked
    duplicates = sum(n - 1 for n in printed.values() if n > 1)
    times = sorted(r for _, r in recoveries)
    print("soak report: %.1f min, %d faults, %d records produced and acknowledged, %d written "
          "(distinct), %d lost, %d duplicates, %d never produced; recovery median %.1f s, max %.1f s (%s)"
          % (float(minutes), len(recoveries), len(acked), len(set(printed)), len(lost), duplicates,
             len(unknown), times[len(times) // 2] if times else 0, times[-1] if times else 0,
             max(recoveries, key=lambda r: r[1])[0] if recoveries else "-"))
    if lost or unknown:
        sys.exit("soak: %d lost, %d unknown records (first lost: %s)" % (len(lost), len(unknown), sorted(lost)[:5]))


if __name__ == "__main__":
    main()
