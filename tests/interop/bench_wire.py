"""Produce throughput of librdkafka (confluent-kafka) against `kdeck serve`, next to the raw
loopback TCP rate measured in the same run.

Usage: bench_wire.py KDECK_BINARY [--records N] [--record-size BYTES]
Prints one kafka-producer-perf-test-style line per case: RF=1/acks=1 and RF=3/acks=all.
"""

import argparse
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import interop  # noqa: E402

from confluent_kafka import Producer  # noqa: E402

MB = 1024 * 1024


def loopback_rate(seconds=2.0, chunk=1 << 20):
    """Bytes per second one TCP connection carries over loopback (send and discard)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    received = [0]

    def sink():
        conn, _ = server.accept()
        while True:
            data = conn.recv(chunk)
            if not data:
                break
            received[0] += len(data)
        conn.close()

    t = threading.Thread(target=sink)
    t.start()
    client = socket.create_connection(server.getsockname())
    payload = b"x" * chunk
    start = time.time()
    while time.time() - start < seconds:
        client.sendall(payload)
    client.close()
    t.join()
    elapsed = time.time() - start
    server.close()
    return received[0] / elapsed


def produce(server, topic, rf, acks, records, size):
    interop.create_topic(server, topic, 6, rf)
    producer = Producer({
        "bootstrap.servers": server.bootstrap,
        "acks": acks,
        "linger.ms": 5,
        "batch.size": 1_000_000,
        "queue.buffering.max.messages": 1_000_000,
    })
    latencies = []
    failed = [0]

    def delivered(err, msg):
        if err is not None:
            failed[0] += 1
        else:
            latencies.append(msg.latency())

    value = b"v" * size
    start = time.time()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value=value, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(300)
    elapsed = time.time() - start
    latencies.sort()
    n = len(latencies)
    avg = sum(latencies) / n * 1000 if n else 0.0
    p50 = latencies[n // 2] * 1000 if n else 0.0
    p99 = latencies[min(n - 1, int(n * 0.99))] * 1000 if n else 0.0
    print(
        f"RF={rf} acks={acks}: {records} records sent, {records / elapsed:.1f} records/sec "
        f"({records * size / elapsed / MB:.2f} MB/sec), {avg:.2f} ms avg latency, "
        f"{p50:.2f} ms 50th, {p99:.2f} ms 99th, {failed[0]} failed",
        flush=True,
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kdeck")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--record-size", type=int, default=100)
    args = parser.parse_args()
    interop.KDECK = os.path.abspath(args.kdeck)
    rate = loopback_rate()
    print(f"raw loopback TCP (one connection): {rate / MB:.1f} MB/sec", flush=True)
    server = interop.Server()
    try:
        produce(server, "bench-rf1", 1, "1", args.records, args.record_size)
        produce(server, "bench-rf3", 3, "all", args.records, args.record_size)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
