#!/usr/bin/env python3
"""One run of scripts/bench-metrics.sh: a `krec consume` of the topic, scraped or not.

    bench_metrics_run.py MODE KREC BOOTSTRAP TOPIC

MODE is plain (no --metrics), scraped (--metrics, /metrics scraped every 20 ms for the whole
run) or idle (--metrics at the end of the topic for 2 s, scraped the same way). Prints one
line: "mode wall_s cpu_s scrapes p50_ms p99_ms max_ms", the times of the krec process from
wait4(2) (scripts/lib/timer.py).
"""
import os
import signal
import socket
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import timer  # noqa: E402


def main():
    mode, krec, bootstrap, topic = sys.argv[1:5]
    args = [krec, "consume", "-b", bootstrap, "-t", topic]
    args += ["-o", "end"] if mode == "idle" else ["-e"]
    port = None
    if mode != "plain":
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        args += ["--metrics", "127.0.0.1:%d" % port]
    latencies, done = [], threading.Event()

    def scrape():
        url = "http://127.0.0.1:%d/metrics" % port
        while not done.is_set():
            start = time.monotonic()
            try:
                urllib.request.urlopen(url, timeout=5).read()
                latencies.append(time.monotonic() - start)
            except OSError:
                pass  # not listening yet, or gone
            done.wait(0.02)

    child = timer.start(args, stdout=os.devnull)
    scraper = threading.Thread(target=scrape)
    if mode != "plain":
        scraper.start()
    if mode == "idle":
        time.sleep(2)
        os.kill(child.pid, signal.SIGTERM)
    usage = timer.wait(child)
    done.set()
    if mode != "plain":
        scraper.join()
    if usage.exit_code != 0:
        sys.exit("krec failed: exit code %d" % usage.exit_code)
    latencies.sort()

    def pick(q):
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies else 0

    print("%s\t%.3f\t%.3f\t%d\t%.2f\t%.2f\t%.2f" % (mode, usage.wall_s, usage.cpu_s, len(latencies),
          pick(0.5), pick(0.99), latencies[-1] * 1000 if latencies else 0))


if __name__ == "__main__":
    main()
