"""Interop tests: real Kafka clients (kcat/librdkafka, confluent-kafka, kafka-python) against
`kdeck serve --ephemeral --brokers 3 --no-demo` on free ports.

Usage: interop.py KDECK_BINARY [SCENARIO...]. Each scenario starts its own server, so one
failure does not cascade. Exit status 0 only if every scenario passed. Scenarios listed in
PENDING are skipped unless named.
"""

import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

KDECK = None


class Server:
    """A running `kdeck serve`, driven through its stdin commands."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="kdeck-interop-")
        config = os.path.join(self.dir, "kdeck.toml")
        with open(config, "w") as f:
            f.write("[wire]\nbase_port = 0\n")
        self.log = open(os.path.join(self.dir, "serve.log"), "w+")
        self.proc = subprocess.Popen(
            [KDECK, "serve", "--ephemeral", "--brokers", "3", "--no-demo", "--config", config],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            bufsize=1,
        )
        self.lines = []
        self.replies = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.bootstrap = self._wait(lambda l: l.startswith("bootstrap.servers="), 60).split("=", 1)[1]
        self.addresses = {}
        for line in self.lines:
            if line.startswith("broker ") and " listening on " in line:
                parts = line.split()
                self.addresses[int(parts[1])] = parts[-1]

    def _read(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.log.write(line + "\n")
            with self.cond:
                self.lines.append(line)
                if line.startswith("ok ") or line.startswith("error "):
                    self.replies.append(line)
                self.cond.notify_all()

    def _wait(self, pred, timeout):
        deadline = time.time() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    if pred(line):
                        return line
                left = deadline - time.time()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError("kdeck serve did not print what was expected; log in " + self.dir)
                self.cond.wait(left)

    def command(self, text, timeout=30):
        with self.cond:
            seen = len(self.replies)
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        deadline = time.time() + timeout
        with self.cond:
            while len(self.replies) <= seen:
                left = deadline - time.time()
                if left <= 0:
                    raise AssertionError(f"no answer to {text!r}")
                self.cond.wait(left)
            reply = self.replies[seen]
        assert reply.startswith("ok "), f"{text!r} -> {reply}"
        return reply

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise AssertionError("kdeck serve did not stop on SIGTERM")
        assert self.proc.returncode == 0, f"kdeck serve exited with {self.proc.returncode}"


def admin(server):
    # One client per server: a future outlives nothing if its client is collected.
    if getattr(server, "admin", None) is None:
        server.admin = AdminClient({"bootstrap.servers": server.bootstrap})
    return server.admin


def create_topic(server, name, partitions, rf, config=None):
    fs = admin(server).create_topics([NewTopic(name, partitions, rf, config=config or {})])
    for f in fs.values():
        f.result(timeout=30)
    # Wait until every partition has a leader in the metadata.
    deadline = time.time() + 30
    while time.time() < deadline:
        md = admin(server).list_topics(name, timeout=10)
        t = md.topics.get(name)
        if t and t.error is None and len(t.partitions) == partitions and all(p.leader >= 0 for p in t.partitions.values()):
            return
        time.sleep(0.2)
    raise AssertionError(f"topic {name} has no leaders")


def kcat(server, *args, input=None, timeout=120):
    result = subprocess.run(
        ["kcat", "-b", server.bootstrap, *args],
        input=input,
        capture_output=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"kcat {args} failed: {result.stderr.decode(errors='replace')}"
    return result.stdout


def end_offsets(server, topic, partitions):
    c = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "probe-" + uuid.uuid4().hex})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
    finally:
        c.close()


def committed_offsets(server, group, topic, partitions):
    from confluent_kafka import ConsumerGroupTopicPartitions

    fs = admin(server).list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])]
    )
    result = list(fs.values())[0].result(timeout=30)
    return {tp.partition: tp.offset for tp in result.topic_partitions}


def scenario_kcat(server):
    out = kcat(server, "-L").decode()
    assert " 3 brokers:" in out, out
    for broker, addr in server.addresses.items():
        assert f"broker {broker} at {addr}" in out, out
    create_topic(server, "kcat", 3, 3)
    out = kcat(server, "-L", "-t", "kcat").decode()
    assert "isrs: " in out and 'topic "kcat" with 3 partitions' in out, out
    messages = [f"message-{i}" for i in range(10_000)]
    keyed = "\n".join(f"k{i % 100}:{m}" for i, m in enumerate(messages))
    kcat(server, "-P", "-t", "kcat", "-K:", "-X", "acks=all", "-z", "snappy", input=keyed.encode() + b"\n")
    got = kcat(server, "-C", "-t", "kcat", "-o", "beginning", "-e", "-q").decode().split("\n")
    got = [g for g in got if g]
    assert sorted(got) == sorted(messages), f"read {len(got)} of {len(messages)}"
    group_read = kcat(
        server, "-G", "kcat-group", "kcat", "-o", "beginning", "-e", "-q",
        "-X", "enable.auto.commit=true", "-X", "auto.commit.interval.ms=100",
    ).decode().split("\n")
    group_read = [g for g in group_read if g]
    assert sorted(group_read) == sorted(messages), f"group read {len(group_read)}"
    # kcat commits on its way out; the committed offsets are the end offsets.
    committed, ends = committed_offsets(server, "kcat-group", "kcat", 3), end_offsets(server, "kcat", 3)
    assert all(e > 0 for e in ends.values()), ends
    assert committed == ends, (committed, ends)


def commit(consumer):
    """A synchronous commit; having nothing new to commit is fine."""
    try:
        consumer.commit(asynchronous=False)
    except KafkaException as e:
        if e.args[0].code() != KafkaError._NO_OFFSET:
            raise


def scenario_confluent(server):
    topic, partitions, total = "orders", 6, 100_000
    create_topic(server, topic, partitions, 3)
    md = admin(server).list_topics(topic, timeout=10).topics[topic]
    assert all(len(p.replicas) == 3 and len(p.isrs) == 3 for p in md.partitions.values())
    producer = Producer({
        "bootstrap.servers": server.bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
    })
    failures = []

    def delivered(err, msg):
        if err is not None:
            failures.append(err)

    for i in range(total):
        while True:
            try:
                producer.produce(topic, key=f"user-{i % 1000}", value=str(i), on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0, "records left unsent"
    assert not failures, failures[:3]

    seen = {}
    lock = threading.Lock()
    done = threading.Event()

    def consume(index):
        c = Consumer({
            "bootstrap.servers": server.bootstrap,
            "group.id": "orders-readers",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        })
        c.subscribe([topic])
        try:
            while not done.is_set():
                msgs = c.consume(500, timeout=0.5)
                for m in msgs:
                    if m.error():
                        if m.error().code() != KafkaError._PARTITION_EOF:
                            raise AssertionError(m.error())
                        continue
                    with lock:
                        key = (m.partition(), m.offset())
                        assert key not in seen, f"{key} read twice"
                        seen[key] = m.value()
                if msgs:
                    commit(c)
            commit(c)
        finally:
            c.close()

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    deadline = time.time() + 120
    while time.time() < deadline and len(seen) < total:
        time.sleep(0.2)
    done.set()
    for t in threads:
        t.join(60)
    assert len(seen) == total, f"read {len(seen)} of {total}"
    assert sorted(int(v) for v in seen.values()) == list(range(total))
    groups = admin(server).list_consumer_groups().result(timeout=30)
    assert "orders-readers" in [g.group_id for g in groups.valid], groups.valid
    described = admin(server).describe_consumer_groups(["orders-readers"])["orders-readers"].result(timeout=30)
    assert described.group_id == "orders-readers"
    assert committed_offsets(server, "orders-readers", topic, partitions) == end_offsets(server, topic, partitions)


def scenario_kafka_python(server):
    from kafka import KafkaConsumer, KafkaProducer

    topic = "clicks"
    create_topic(server, topic, 3, 3)
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, acks="all")
    for i in range(1000):
        producer.send(topic, key=str(i % 10).encode(), value=str(i).encode())
    producer.flush(60)

    def read(expected):
        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=server.bootstrap,
            group_id="clicks-group",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            consumer_timeout_ms=8000,
        )
        values = []
        deadline = time.time() + 60
        while len(values) < expected and time.time() < deadline:
            for records in consumer.poll(timeout_ms=1000).values():
                values.extend(int(r.value) for r in records)
        consumer.commit()
        # Nothing more arrives: the group read each record once.
        extra = consumer.poll(timeout_ms=2000)
        consumer.close()
        assert not any(extra.values()), "records past the expected ones"
        return values

    first = read(1000)
    assert sorted(first) == list(range(1000)), f"read {len(first)}"
    for i in range(1000, 1500):
        producer.send(topic, key=str(i % 10).encode(), value=str(i).encode())
    producer.flush(60)
    producer.close()
    second = read(500)
    assert sorted(second) == list(range(1000, 1500)), f"resumed with {len(second)} records, not the 500 new ones"


def read_all(server, topic, partitions):
    """Every record of `topic` up to its end offsets now: {(partition, offset): int value}."""
    c = Consumer({
        "bootstrap.servers": server.bootstrap,
        "group.id": "audit-" + uuid.uuid4().hex,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": True,
    })
    c.subscribe([topic])
    read = {}
    eof = set()
    deadline = time.time() + 120
    ends = end_offsets(server, topic, partitions)
    while time.time() < deadline:
        for m in c.consume(1000, timeout=1):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF and m.offset() >= ends[m.partition()]:
                    eof.add(m.partition())
                continue
            read[(m.partition(), m.offset())] = int(m.value())
        if len(eof) == partitions:
            break
    c.close()
    return read


def check_read_back(server, topic, partitions, acked, keys):
    """Each acknowledged record is read back once, where it was acknowledged, nothing is
    written twice, and the records of one key (value % keys) keep their order."""
    read = read_all(server, topic, partitions)
    values = list(read.values())
    assert len(values) == len(set(values)), "a record was written twice"
    for key, value in acked.items():
        assert read.get(key) == value, f"acknowledged record {value} at {key} is missing"
    for p in range(partitions):
        last = {}
        for (part, off) in sorted(k for k in read if k[0] == p):
            v = read[(part, off)]
            k = v % keys
            assert last.get(k, -1) < v, f"partition {p}: {v} after {last.get(k)}"
            last[k] = v


class PacedProducer:
    """An idempotent acks=all librdkafka producer sending `rate` records/s from a thread of
    its own (values are sequence numbers, keys value % keys), noting every delivery and every
    fatal error."""

    def __init__(self, server, topic, rate, keys, config=None):
        self.topic, self.rate, self.keys = topic, rate, keys
        self.acked, self.failed, self.fatal = {}, [], []
        self.sent = 0
        self.producer = Producer({
            "bootstrap.servers": server.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "error_cb": self._error,
            **(config or {}),
        })
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _error(self, err):
        if err.fatal():
            self.fatal.append(err)

    def _delivered(self, err, msg):
        if err is None:
            self.acked[(msg.partition(), msg.offset())] = int(msg.value())
        else:
            self.failed.append(err)

    def _run(self):
        start = time.time()
        while not self.done.is_set() and not self.fatal:
            # Whatever is due now goes at once: waits shorter than a millisecond round up.
            due = int((time.time() - start) * self.rate)
            while self.sent < due:
                try:
                    self.producer.produce(self.topic, key=f"k{self.sent % self.keys}", value=str(self.sent),
                                          on_delivery=self._delivered)
                    self.sent += 1
                except BufferError:
                    break
            self.producer.poll(0.005)

    def finish(self, timeout=120):
        """Stops sending, waits for every delivery report, and checks that none failed (a
        retriable error is retried; NETWORK_EXCEPTION from a broker fails the records)."""
        self.done.set()
        self.thread.join(30)
        left = self.producer.flush(timeout)
        assert not self.fatal, f"fatal producer errors: {self.fatal}"
        assert left == 0, f"{left} records never got a delivery report"
        assert not self.failed, f"{len(self.failed)} failed deliveries: {self.failed[:3]}"


def scenario_idempotent_steady(server):
    """librdkafka's idempotent producer at 2,000 records/s for 60 s: nothing fatal, nothing
    lost (issue 13: batches sent in order were refused as out of order)."""
    topic, partitions = "steady", 6
    create_topic(server, topic, partitions, 3)
    producer = PacedProducer(server, topic, rate=2000, keys=97)
    time.sleep(60)
    producer.finish()
    assert len(producer.acked) == producer.sent, f"{len(producer.acked)} of {producer.sent} delivered"
    assert sum(end_offsets(server, topic, partitions).values()) == producer.sent
    print(f"  idempotent-steady: {producer.sent} records delivered")


def status(server):
    """`status` as a dict: controller, brokers {id: state}, offline, under_replicated."""
    reply = server.command("status")
    head, rest = reply.split(" brokers=[", 1)
    listed, tail = rest.split("] ", 1)
    fields = dict(w.split("=", 1) for w in (head + " " + tail).split()[1:])
    brokers = {}
    for entry in listed.split(", "):
        ident, state = entry.split(" ", 1)[0].split("=", 1)
        brokers[int(ident.split("@", 1)[0])] = state
    return {
        "controller": fields.get("controller"),
        "brokers": brokers,
        "offline": int(fields["offline"]),
        "under_replicated": int(fields["under_replicated"]),
    }


def wait_healthy(server, timeout=60):
    """Until every broker runs unfenced and every partition is fully replicated."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        s = status(server)
        if all(v == "running" for v in s["brokers"].values()) and s["offline"] == 0 and s["under_replicated"] == 0:
            return
        time.sleep(0.2)
    raise AssertionError(f"the cluster did not heal: {status(server)}")


def leader_of(server, topic, partition):
    for _ in range(10):
        md = admin(server).list_topics(topic, timeout=10).topics.get(topic)
        if md and partition in md.partitions and md.partitions[partition].leader >= 0:
            return md.partitions[partition].leader
        time.sleep(0.5)
    raise AssertionError(f"{topic}/{partition} has no leader")


def scenario_idempotent_chaos(server):
    """An idempotent acks=all producer through kills, controlled stops and pauses of partition
    leaders and of the controller's broker: nothing fatal, and every acknowledged record is
    read back once, in order."""
    topic, partitions = "chaos", 6
    create_topic(server, topic, partitions, 3, {"min.insync.replicas": "2"})
    producer = PacedProducer(server, topic, rate=2000, keys=101, config={"message.timeout.ms": 120_000})
    faults = [("kill", "start"), ("stop", "start"), ("pause", "resume")]
    steps = []
    for step in range(6):
        fault, undo = faults[step % len(faults)]
        if step % 2 == 1:
            target, whose = int(status(server)["controller"]), "controller"
        else:
            target, whose = leader_of(server, topic, step % partitions), f"leader of {topic}/{step % partitions}"
        time.sleep(1.5)
        server.command(f"{fault} {target}")
        time.sleep(3)
        server.command(f"{undo} {target}")
        wait_healthy(server)
        steps.append(f"{fault} {target} ({whose})")
        assert not producer.fatal, f"fatal producer errors after {steps}: {producer.fatal}"
    time.sleep(1.5)
    producer.finish()
    assert producer.acked, "nothing was acknowledged"
    check_read_back(server, topic, partitions, producer.acked, keys=101)
    print(f"  idempotent-chaos: {len(producer.acked)} records acknowledged through {'; '.join(steps)}")


def scenario_group_failover(server):
    """A confluent-kafka group member keeps its member id through its coordinator's failover:
    no revocation, no new assignment after the kill."""
    topic, group = "members", "steadfast"
    create_topic(server, topic, 3, 3)
    events = []
    consumer = Consumer({
        "bootstrap.servers": server.bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 30_000,
        "heartbeat.interval.ms": 500,
    })
    consumer.subscribe(
        [topic],
        on_assign=lambda c, ps: events.append(("assign", time.time())),
        on_revoke=lambda c, ps: events.append(("revoke", time.time())),
    )
    producer = Producer({"bootstrap.servers": server.bootstrap, "acks": "all"})
    received = []

    def run(seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            producer.produce(topic, value=str(len(received)))
            producer.poll(0)
            for m in consumer.consume(100, timeout=0.1):
                if not m.error():
                    received.append(m.value())

    run(5)
    assert events and events[-1][0] == "assign", f"the member joined: {events}"
    member = consumer.memberid()
    described = admin(server).describe_consumer_groups([group])[group].result(timeout=30)
    coordinator = described.coordinator.id
    assert [m.member_id for m in described.members] == [member], described.members
    killed_at = time.time()
    server.command(f"kill {coordinator}")
    run(15)
    before = len(received)
    run(3)
    after = [e for e, at in events if at >= killed_at]
    assert not after, f"a rebalance after the coordinator's failover: {after}"
    assert consumer.memberid() == member, f"member id {member} became {consumer.memberid()}"
    assert len(received) > before, "the member still receives records"
    server.command(f"start {coordinator}")
    consumer.close()
    producer.flush(30)


def scenario_static_member(server):
    """KIP-345 with librdkafka: two consumers with group.instance.id; one closes (a static
    member sends no LeaveGroup) and a new one with the same instance id starts within
    session.timeout.ms. No rebalance: the other member gets no revoke or assign, the group
    keeps its generation's members, and the restarted one owns its partitions again."""
    topic, group = "static", "static-members"
    create_topic(server, topic, 4, 3)

    def member(instance, events):
        consumer = Consumer({
            "bootstrap.servers": server.bootstrap,
            "group.id": group,
            "group.instance.id": instance,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 30_000,
            "heartbeat.interval.ms": 500,
        })
        consumer.subscribe(
            [topic],
            on_assign=lambda c, ps: events.append(("assign", sorted(p.partition for p in ps))),
            on_revoke=lambda c, ps: events.append(("revoke", sorted(p.partition for p in ps))),
        )
        return consumer

    def pump(consumers, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            for c in consumers:
                c.consume(10, timeout=0.05)

    def owned(consumer):
        return sorted(p.partition for p in consumer.assignment())

    a_events, b_events = [], []
    a, b = member("static-a", a_events), member("static-b", b_events)
    deadline = time.time() + 60
    while not (len(owned(a)) == 2 and len(owned(b)) == 2):
        assert time.time() < deadline, f"never shared: {owned(a)} {owned(b)}"
        pump([a, b], 0.5)
    a_partitions = owned(a)
    described = admin(server).describe_consumer_groups([group])[group].result(timeout=30)
    instances = {m.group_instance_id: m.member_id for m in described.members}
    assert set(instances) == {"static-a", "static-b"}, described.members
    b_events.clear()

    a.close()
    pump([b], 2)
    a2_events = []
    a2 = member("static-a", a2_events)
    deadline = time.time() + 30
    while owned(a2) != a_partitions:
        assert time.time() < deadline, f"the restarted member never got {a_partitions}: {owned(a2)}"
        pump([a2, b], 0.5)
    pump([a2, b], 3)
    assert b_events == [], f"the other member saw a rebalance: {b_events}"
    assert owned(b) == sorted(set(range(4)) - set(a_partitions)), owned(b)
    after = admin(server).describe_consumer_groups([group])[group].result(timeout=30)
    now = {m.group_instance_id: m.member_id for m in after.members}
    assert set(now) == {"static-a", "static-b"}, after.members
    assert now["static-b"] == instances["static-b"], "b kept its member id"
    assert now["static-a"] != instances["static-a"], "the restarted a has a new member id"
    assert after.state.name == "STABLE", after.state
    a2.close()
    b.close()


def scenario_failover(server):
    topic, partitions = "payments", 3
    create_topic(server, topic, partitions, 3, {"min.insync.replicas": "2"})
    leader = admin(server).list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    producer = Producer({
        "bootstrap.servers": server.bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 2,
        "message.timeout.ms": 60_000,
    })
    acked = {}
    errors = []

    def delivered(err, msg):
        if err is None:
            acked[(msg.partition(), msg.offset())] = int(msg.value())
        else:
            errors.append(err)

    total = 60_000
    for i in range(total):
        if i == 20_000:
            server.command(f"kill {leader}")
        if i == 45_000:
            server.command(f"start {leader}")
        while True:
            try:
                producer.produce(topic, key=str(i % 97), value=str(i), on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
        if i % 1000 == 0:
            # Spread the load over seconds, so the kill lands among requests in flight.
            producer.poll(0.05)
    assert producer.flush(120) == 0, "records left unsent"
    assert len(acked) > 0
    check_read_back(server, topic, partitions, acked, keys=97)
    print(f"  failover: {len(acked)} acknowledged, {len(errors)} failed deliveries, broker {leader} killed and restarted")


def raw_connection(server):
    host, port = list(server.addresses.values())[0].rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    return s


def closed_by_server(s):
    s.settimeout(10)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def scenario_garbage(server):
    rng = random.Random(7)
    # Random bytes.
    for _ in range(20):
        s = raw_connection(server)
        s.sendall(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 4096))))
        s.close()
    # A truncated frame: the length promises more than ever arrives.
    s = raw_connection(server)
    s.sendall(struct.pack(">i", 1000) + b"\x00\x12\x00\x03")
    s.close()
    # A 2 GiB length prefix is refused before anything is allocated.
    s = raw_connection(server)
    s.sendall(struct.pack(">I", 0x7FFFFFFF))
    assert closed_by_server(s), "the server kept a connection announcing a 2 GiB frame"
    s.close()
    # An unknown API key.
    s = raw_connection(server)
    body = struct.pack(">hhih", 4242, 0, 1, -1)
    s.sendall(struct.pack(">i", len(body)) + body)
    assert closed_by_server(s), "the server kept a connection after an unknown API key"
    s.close()
    # ApiVersions with a version from the future: answered in v0 with UNSUPPORTED_VERSION.
    s = raw_connection(server)
    body = struct.pack(">hhih", 18, 99, 7, -1)
    s.sendall(struct.pack(">i", len(body)) + body)
    length = struct.unpack(">i", recv_exact(s, 4))[0]
    answer = recv_exact(s, length)
    correlation, error = struct.unpack(">ih", answer[:6])
    assert (correlation, error) == (7, 35), (correlation, error)
    s.close()
    assert server.alive()
    # The next client is served.
    out = kcat(server, "-L").decode()
    assert " 3 brokers:" in out


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        assert chunk, "connection closed early"
        data += chunk
    return data


def kdeck_cli(server, *args, input=None, timeout=120):
    result = subprocess.run(
        [KDECK, *args, "-b", server.bootstrap],
        input=input,
        capture_output=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"kdeck {args} failed: {result.stderr.decode(errors='replace')}"
    return result.stdout


def scenario_kdeck_cli(server):
    """kdeck's own CLI against real clients' records, and real clients against kdeck's."""
    create_topic(server, "mixed", 3, 3)
    # librdkafka writes compressed batches; kdeck consume must read every codec.
    expected = []
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"]:
        lines = [f"{codec}-{i % 7}:{codec} value {i} 值 ✓" for i in range(500)]
        kcat(server, "-P", "-t", "mixed", "-K:", "-X", "acks=all", "-z", codec, input=("\n".join(lines) + "\n").encode())
        expected += lines
    got = kdeck_cli(server, "consume", "-t", "mixed", "--from", "beginning", "-e", "-f", "%k:%s\\n").decode().split("\n")
    got = [g for g in got if g]
    assert sorted(got) == sorted(expected), f"kdeck consume read {len(got)} of {len(expected)}"
    # Records kdeck produces land where Kafka's partitioner puts them: kcat reads them with
    # their keys, and records with one key share one partition.
    ours = [f"user-{i % 10}|clicked {i}" for i in range(1000)]
    kdeck_cli(server, "produce", "-t", "mixed", "-K", "|", input=("\n".join(ours) + "\n").encode())
    read = kcat(server, "-C", "-t", "mixed", "-o", "beginning", "-e", "-q", "-f", "%p %k|%s\\n").decode().split("\n")
    read = [r for r in read if r.split(" ", 1)[-1].startswith("user-")]
    assert sorted(r.split(" ", 1)[1] for r in read) == sorted(ours), f"kcat read {len(read)} of {len(ours)}"
    partitions_of_key = {}
    for r in read:
        partition, rest = r.split(" ", 1)
        partitions_of_key.setdefault(rest.split("|", 1)[0], set()).add(partition)
    assert all(len(p) == 1 for p in partitions_of_key.values()), partitions_of_key
    # A kdeck group member commits what it read, as a Kafka client sees it.
    kdeck_cli(server, "consume", "-t", "mixed", "-g", "kdeck-group", "-e")
    committed, ends = committed_offsets(server, "kdeck-group", "mixed", 3), end_offsets(server, "mixed", 3)
    assert committed == ends, (committed, ends)
    described = kdeck_cli(server, "groups", "describe", "kdeck-group").decode()
    assert "kdeck-group" in described, described


def scenario_reassign(server):
    """kafka-python's AdminClient moves every replica of a topic while librdkafka's
    idempotent acks=all producer writes to it (KIP-455: AlterPartitionReassignments,
    ListPartitionReassignments); nothing acknowledged is lost or doubled, and a cancel with
    nothing moving gets NO_REASSIGNMENT_IN_PROGRESS."""
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KTopicPartition
    from kafka.errors import NoReassignmentInProgressError, InvalidReplicationAssignmentError

    topic, partitions = "moves", 3
    create_topic(server, topic, partitions, 2)
    producer = PacedProducer(server, topic, rate=500, keys=31)
    time.sleep(3)
    md = admin(server).list_topics(topic, timeout=10).topics[topic]
    brokers = sorted(admin(server).list_topics(timeout=10).brokers)
    # Each partition goes to the broker it lacks and keeps its second replica.
    targets = {}
    for p, pm in md.partitions.items():
        missing = [b for b in brokers if b not in pm.replicas]
        targets[p] = [missing[0], pm.replicas[1]]
    ka = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    try:
        answers = ka.alter_partition_reassignments(
            {KTopicPartition(topic, p): r for p, r in targets.items()}, timeout_ms=30000)
        assert all(e is None for e in answers.values()), answers
        deadline = time.time() + 60
        while time.time() < deadline:
            ongoing = ka.list_partition_reassignments(timeout_ms=30000)
            current = admin(server).list_topics(topic, timeout=10).topics[topic].partitions
            if not ongoing and all(current[p].replicas == targets[p] for p in targets):
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"the moves did not finish: {ongoing}")
        refused = ka.alter_partition_reassignments({KTopicPartition(topic, 0): None}, timeout_ms=30000)
        assert refused[KTopicPartition(topic, 0)] is NoReassignmentInProgressError, refused
        refused = ka.alter_partition_reassignments({KTopicPartition(topic, 0): [0, 42]}, timeout_ms=30000)
        assert refused[KTopicPartition(topic, 0)] is InvalidReplicationAssignmentError, refused
    finally:
        ka.close()
    time.sleep(2)
    producer.finish()
    check_read_back(server, topic, partitions, producer.acked, 31)
    print(f"  reassign: {len(producer.acked)} records acknowledged during the moves, all read back")


def group_state(server, group):
    described = admin(server).describe_consumer_groups([group])[group].result(timeout=30)
    return described.state.name


def wait_group_state(server, group, state, timeout=60):
    deadline = time.time() + timeout
    while group_state(server, group) != state:
        assert time.time() < deadline, f"group {group} never became {state}: {group_state(server, group)}"
        time.sleep(0.2)


def admin_error(future):
    """The Kafka error a failed admin future raises (None when it succeeds)."""
    try:
        future.result(timeout=30)
    except KafkaException as e:
        return e.args[0].code()
    return None


def scenario_group_offsets(server):
    """kafka-consumer-groups.sh's work through confluent-kafka's AdminClient: an empty group's
    offsets altered and read back (and moved by kdeck's CLI), refused while the group has a
    member; groups deleted, refused while one has a member or when it does not exist."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    topic, group = "ledger", "ledger-readers"
    create_topic(server, topic, 3, 3)
    producer = Producer({"bootstrap.servers": server.bootstrap, "acks": "all"})
    for p in range(3):
        for i in range(10):
            producer.produce(topic, value=f"{p}-{i}", partition=p)
    assert producer.flush(30) == 0, "records left unsent"

    def member():
        c = Consumer({
            "bootstrap.servers": server.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        })
        c.subscribe([topic])
        return c

    def read(c, count):
        got = []
        deadline = time.time() + 60
        while len(got) < count:
            assert time.time() < deadline, f"read {len(got)} of {count}"
            got += [(m.partition(), m.offset()) for m in c.consume(100, timeout=0.5) if not m.error()]
        return got

    # The group reads everything, commits and leaves: Empty, its offsets at the ends.
    c = member()
    read(c, 30)
    c.commit(asynchronous=False)
    c.close()
    wait_group_state(server, group, "EMPTY")
    assert committed_offsets(server, group, topic, 3) == {0: 10, 1: 10, 2: 10}

    def alter(offsets):
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p, o) for p, o in offsets.items()])
        return list(admin(server).alter_consumer_group_offsets([request]).values())[0]

    altered = alter({0: 3, 1: 0}).result(timeout=30)
    assert [tp.error for tp in altered.topic_partitions] == [None, None], altered.topic_partitions
    assert committed_offsets(server, group, topic, 3) == {0: 3, 1: 0, 2: 10}
    # kdeck's CLI moves the same offsets: what it commits, librdkafka reads back.
    kdeck_cli(server, "groups", "reset-offsets", group, "--topic", f"{topic}:2", "--shift-by", "-4", "--execute")
    assert committed_offsets(server, group, topic, 3) == {0: 3, 1: 0, 2: 6}

    # A member resumes from there: 7 + 10 + 4 records. While it is in the group, its offsets
    # are not altered and the group is not deleted.
    c = member()
    resumed = read(c, 21)
    assert sorted(resumed) == sorted(
        [(0, o) for o in range(3, 10)] + [(1, o) for o in range(10)] + [(2, o) for o in range(6, 10)]
    ), resumed
    wait_group_state(server, group, "STABLE")
    try:
        # The coordinator refuses a commit from outside the generation (as Kafka's does,
        # UNKNOWN_MEMBER_ID); librdkafka tells it on the partition.
        refused = alter({0: 0}).result(timeout=30).topic_partitions
        assert [tp.error and tp.error.code() for tp in refused] == [KafkaError.UNKNOWN_MEMBER_ID], refused
        deleting = admin(server).delete_consumer_groups([group])[group]
        assert admin_error(deleting) == KafkaError.NON_EMPTY_GROUP
        assert committed_offsets(server, group, topic, 3) == {0: 3, 1: 0, 2: 6}
    finally:
        c.close()

    # Empty again, the group is deleted with its offsets; a second deletion finds nothing.
    wait_group_state(server, group, "EMPTY")
    assert admin_error(admin(server).delete_consumer_groups([group])[group]) is None
    groups = admin(server).list_consumer_groups().result(timeout=30)
    assert group not in [g.group_id for g in groups.valid], groups.valid
    assert committed_offsets(server, group, topic, 3) == {0: -1001, 1: -1001, 2: -1001}
    again = admin(server).delete_consumer_groups([group])[group]
    assert admin_error(again) == KafkaError.GROUP_ID_NOT_FOUND


def scenario_configs(server):
    """kafka-configs.sh's work through confluent-kafka's AdminClient: incremental_alter_configs
    SETs and DELETEs a topic's configs, describe_configs shows each with its source
    (DYNAMIC_TOPIC_CONFIG, back at DEFAULT_CONFIG once deleted); a lowered max.message.bytes
    refuses a larger record at once; a bad value is INVALID_CONFIG and changes nothing."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, ResourceType

    topic = "settings"
    create_topic(server, topic, 1, 3)
    resource = lambda entries: ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    set_ = lambda k, v: ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
    delete = lambda k: ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE)

    def alter(*entries):
        return list(admin(server).incremental_alter_configs([resource(list(entries))]).values())[0]

    def describe():
        future = list(admin(server).describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values())[0]
        # librdkafka's ConfigSource enum or its number, depending on the client's version.
        return {name: (e.value, getattr(e.source, "value", e.source)) for name, e in future.result(timeout=30).items()}

    assert describe()["retention.ms"] == ("604800000", ConfigSource.DEFAULT_CONFIG.value), describe()["retention.ms"]
    assert admin_error(alter(set_("retention.ms", "3600000"), set_("max.message.bytes", "2000"))) is None
    configs = describe()
    assert configs["retention.ms"] == ("3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value), configs["retention.ms"]
    assert configs["max.message.bytes"] == ("2000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)

    # The new limit holds for the next produce.
    producer = Producer({"bootstrap.servers": server.bootstrap, "acks": "all", "linger.ms": 0})
    errors = []
    producer.produce(topic, value=b"x" * 5000, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    assert errors and errors[0] is not None and errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE, errors

    assert admin_error(alter(delete("retention.ms"))) is None
    configs = describe()
    assert configs["retention.ms"] == ("604800000", ConfigSource.DEFAULT_CONFIG.value), configs["retention.ms"]
    assert configs["max.message.bytes"][1] == ConfigSource.DYNAMIC_TOPIC_CONFIG.value

    assert admin_error(alter(set_("segment.bytes", "not-a-number"))) == KafkaError.INVALID_CONFIG
    assert describe()["segment.bytes"][1] == ConfigSource.DEFAULT_CONFIG.value


def scenario_log_dirs(server):
    """kafka-log-dirs.sh, kafka-delete-records.sh and kafka-topics.sh --alter through real
    admin clients: kafka-python's describe_log_dirs sizes every replica on every broker;
    confluent-kafka's delete_records moves a log start (to an offset, to the high watermark,
    refused past it) and create_partitions grows a topic (refused to shrink); a group
    member shows with its client.id and host in describe_consumer_groups."""
    from confluent_kafka.admin import NewPartitions
    from kafka.admin import KafkaAdminClient

    topic = "sized"
    create_topic(server, topic, 3, 3)
    producer = Producer({"bootstrap.servers": server.bootstrap, "acks": "all"})
    for p in range(3):
        for i in range(100):
            producer.produce(topic, value=f"{p}-{i}-".encode() + b"x" * 100, partition=p)
    assert producer.flush(30) == 0, "records left unsent"

    # Every broker hosts a replica of each partition (RF 3 of 3): each has a size.
    deadline = time.time() + 30
    while True:
        client = KafkaAdminClient(bootstrap_servers=server.bootstrap)
        try:
            answers = client.describe_log_dirs(topic_partitions=[topic])
        finally:
            client.close()
        sizes = {}
        for answer in answers:
            for log_dir in answer["log_dirs"]:
                assert log_dir["error_code"] == 0, log_dir
                for t in log_dir["topics"]:
                    for part in t["partitions"]:
                        sizes[(answer["broker"], part["partition_index"])] = part["partition_size"]
        ready = len(sizes) == 9 and all(size > 100 * 100 for size in sizes.values())
        if ready:
            break
        assert time.time() < deadline, f"log dirs say {sizes}: {answers}"
        time.sleep(0.5)

    # DeleteRecords: to an offset, to the high watermark (-1), past it.
    tps = [TopicPartition(topic, 0, 50), TopicPartition(topic, 1, -1)]
    results = admin(server).delete_records(tps)
    lows = {tp.partition: f.result(timeout=30).low_watermark for tp, f in results.items()}
    assert lows == {0: 50, 1: 100}, lows
    c = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "probe-" + uuid.uuid4().hex})
    try:
        assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (50, 100)
        assert c.get_watermark_offsets(TopicPartition(topic, 1), timeout=10) == (100, 100)
    finally:
        c.close()
    past = list(admin(server).delete_records([TopicPartition(topic, 2, 500)]).values())[0]
    assert admin_error(past) == KafkaError.OFFSET_OUT_OF_RANGE

    # CreatePartitions grows the topic; shrinking is INVALID_PARTITIONS.
    grown = admin(server).create_partitions([NewPartitions(topic, 5)])[topic]
    assert admin_error(grown) is None
    deadline = time.time() + 30
    while True:
        t = admin(server).list_topics(topic, timeout=10).topics[topic]
        if len(t.partitions) == 5 and all(p.leader >= 0 for p in t.partitions.values()):
            break
        assert time.time() < deadline, t.partitions
        time.sleep(0.2)
    shrunk = admin(server).create_partitions([NewPartitions(topic, 2)])[topic]
    assert admin_error(shrunk) == KafkaError.INVALID_PARTITIONS

    # A member's client.id and host, as kafka-consumer-groups.sh --members shows them.
    group = "sized-readers"
    member = Consumer({
        "bootstrap.servers": server.bootstrap,
        "group.id": group,
        "client.id": "interop-app",
        "auto.offset.reset": "earliest",
    })
    member.subscribe([topic])
    try:
        deadline = time.time() + 60
        while not member.assignment():
            assert time.time() < deadline, "no assignment"
            member.poll(0.5)
        description = admin(server).describe_consumer_groups([group])[group].result(timeout=30)
        members = [(m.client_id, m.host) for m in description.members]
        assert len(members) == 1 and members[0][0] == "interop-app", members
        assert members[0][1].startswith("/127.0.0.1"), members
    finally:
        member.close()


def scenario_acls(server):
    """kafka-acls.sh --list through confluent-kafka's AdminClient: kdeck serve has no
    authorizer and answers DescribeAcls as such a Kafka broker does, SECURITY_DISABLED ("No
    Authorizer is configured.", checked byte for byte in tests/wire_protocol.rs). librdkafka
    (up to 2.16 at least) reads that answer's error code and drops it, so against kdeck, as
    against Kafka without an authorizer, the listing succeeds and is empty; an error here
    would mean the answer did not decode."""
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    everything = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    future = admin(server).describe_acls(everything, request_timeout=30)
    try:
        bindings = future.result(timeout=30)
    except KafkaException as e:
        # A librdkafka that passes the code on must name SECURITY_DISABLED.
        error = e.args[0]
        assert error.code() == KafkaError.SECURITY_DISABLED, error
        return
    assert bindings == [], f"no authorizer, no bindings: {bindings!r}"


def scenario_fetch_sessions(server):
    """kafka-python's consumer uses incremental fetch sessions (KIP-227): after its first full
    fetch each broker gives it a session, later fetches are incremental and answered with only
    the partitions that changed, and a restarted broker (whose sessions are gone) makes it
    start over with a full fetch; every record is read once, in order per partition."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.consumer import fetcher

    seen = []  # (node, full request?, session id in the answer, error code)
    original = fetcher.FetchSessionHandler.handle_response

    def recording(self, response):
        seen.append((self.node_id, self.next_metadata.is_full, response.session_id, response.error_code))
        return original(self, response)

    fetcher.FetchSessionHandler.handle_response = recording
    try:
        topic = "sessions"
        partitions = 12
        create_topic(server, topic, partitions, 3)
        producer = KafkaProducer(bootstrap_servers=server.bootstrap, acks="all")
        consumer = KafkaConsumer(
            bootstrap_servers=server.bootstrap,
            enable_auto_commit=False,
            fetch_max_wait_ms=100,
        )
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        got = {}

        def produce(start, end):
            # One partition at a time, so most fetches find news on few partitions.
            for i in range(start, end):
                producer.send(topic, partition=i % partitions, value=str(i).encode())
            producer.flush(60)

        def read(until):
            deadline = time.time() + 60
            while sum(len(v) for v in got.values()) < until and time.time() < deadline:
                for tp, records in consumer.poll(timeout_ms=500).items():
                    got.setdefault(tp.partition, []).extend(int(r.value) for r in records)

        for step in range(10):
            produce(step * 30, step * 30 + 30)
            read(step * 30 + 30)
        incremental = [s for s in seen if not s[1] and s[3] == 0 and s[2] != 0]
        assert incremental, f"no incremental fetch was answered: {seen[:20]}"
        assert any(s[1] and s[2] != 0 for s in seen), "no full fetch opened a session"

        # Restart the leader of partition 0: its sessions go with it.
        leader = leader_of(server, topic, 0)
        before = len(seen)
        server.command(f"kill {leader}")
        server.command(f"start {leader}")
        wait_healthy(server)
        # Preferred leaders back, so the consumer fetches from the restarted broker again.
        server.command("elect")
        for step in range(10, 20):
            produce(step * 30, step * 30 + 30)
            read(step * 30 + 30)
        after = seen[before:]
        assert any(s[0] == leader and s[1] and s[2] != 0 for s in after), (
            f"no new session from the restarted broker {leader}: {after[:30]}"
        )
        assert [s for s in after if not s[1] and s[3] == 0 and s[2] != 0], "incremental again after the restart"

        consumer.close()
        producer.close()
        for p in range(partitions):
            values = got.get(p, [])
            expected = [i for i in range(600) if i % partitions == p]
            assert values == expected, f"partition {p}: {values[:10]}... != {expected[:10]}..."
    finally:
        fetcher.FetchSessionHandler.handle_response = original

def scenario_legacy_clients(server):
    """Older clients as Kafka 3.9 serves them: kafka-python pinned to 0.10.1 (Produce v2 and
    Fetch v3 with message format v1, ListOffsets v1) and to 0.9 (Produce v1, Fetch v1,
    message format v0), and kcat without ApiVersions as a 0.9 client."""
    from kafka import KafkaConsumer, KafkaProducer

    for api_version, compression in [((0, 10, 1), "gzip"), ((0, 9), None), ((0, 10, 1), None)]:
        topic = "legacy-" + "-".join(map(str, api_version)) + "-" + (compression or "plain")
        create_topic(server, topic, 3, 3)
        producer = KafkaProducer(
            bootstrap_servers=server.bootstrap, acks="all", api_version=api_version,
            compression_type=compression,
        )
        for i in range(500):
            producer.send(topic, key=str(i % 10).encode(), value=str(i).encode())
        producer.flush(60)
        producer.close()
        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=server.bootstrap,
            api_version=api_version,
            group_id=topic + "-group",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        values, timestamps = [], set()
        deadline = time.time() + 60
        while len(values) < 500 and time.time() < deadline:
            for records in consumer.poll(timeout_ms=1000).values():
                values.extend(int(r.value) for r in records)
                timestamps.update(r.timestamp for r in records)
        consumer.commit()
        consumer.close()
        assert sorted(values) == list(range(500)), f"{api_version}: read {len(values)}"
        if api_version == (0, 9):
            # kafka-python reports a magic 0 message's missing timestamp as None.
            assert timestamps <= {None, -1}, f"message format v0 has no timestamps: {timestamps}"
        else:
            assert all(t is not None and t > 0 for t in timestamps), f"format v1 keeps timestamps: {timestamps}"
        assert sum(committed_offsets(server, topic + "-group", topic, 3).values()) == 500

    old = ["-X", "api.version.request=false", "-X", "broker.version.fallback=0.9.0"]
    create_topic(server, "legacy-kcat", 1, 3)
    messages = [f"old-{i}" for i in range(1000)]
    kcat(server, *old, "-P", "-t", "legacy-kcat", "-z", "gzip", input="\n".join(messages).encode() + b"\n")
    kcat(server, *old, "-P", "-t", "legacy-kcat", input=b"last\n")
    got = kcat(server, *old, "-C", "-t", "legacy-kcat", "-o", "beginning", "-e", "-q").decode().split("\n")
    assert [g for g in got if g] == messages + ["last"], f"kcat 0.9 read {len(got)}"


def read_isolated(server, topic, partitions, isolation):
    """Every record of `topic` at `isolation` ("read_committed" or "read_uncommitted"), read
    with assign() from offset 0 until each partition reports its end: {partition: [values]}."""
    c = Consumer({
        "bootstrap.servers": server.bootstrap,
        "group.id": "audit-" + uuid.uuid4().hex,
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "isolation.level": isolation,
    })
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    read = {p: [] for p in range(partitions)}
    eof = set()
    deadline = time.time() + 120
    while time.time() < deadline and len(eof) < partitions:
        for m in c.consume(1000, timeout=1):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                else:
                    raise AssertionError(f"reading {topic}: {m.error()}")
                continue
            read[m.partition()].append(m.value().decode())
    c.close()
    assert len(eof) == partitions, f"{topic}: only partitions {sorted(eof)} reached their end"
    return read


def scenario_transactions(server):
    """confluent-kafka's transactional producer (init, begin, send, commit, abort) and
    read_committed / read_uncommitted consumers: committed records once, in order; aborted
    ones only at read_uncommitted; a second producer with the same transactional.id fences
    the first, whose commit then fails."""
    topic, partitions = "txn-orders", 3
    create_topic(server, topic, partitions, 3, {"min.insync.replicas": "2"})

    def producer(tid):
        p = Producer({
            "bootstrap.servers": server.bootstrap,
            "transactional.id": tid,
            "transaction.timeout.ms": 60_000,
        })
        p.init_transactions(30)
        return p

    p = producer("orders-writer")
    expected = {i: [] for i in range(partitions)}
    everything = {i: [] for i in range(partitions)}
    for round_, outcome in enumerate(["commit", "abort", "commit", "abort", "commit"]):
        p.begin_transaction()
        for i in range(30):
            part = i % partitions
            value = f"{outcome}-{round_}-{i}"
            p.produce(topic, value=value, partition=part)
            everything[part].append(value)
            if outcome == "commit":
                expected[part].append(value)
        if outcome == "commit":
            p.commit_transaction(30)
        else:
            p.flush(30)
            p.abort_transaction(30)
    committed = read_isolated(server, topic, partitions, "read_committed")
    assert committed == expected, f"read_committed saw {committed}, expected {expected}"
    uncommitted = read_isolated(server, topic, partitions, "read_uncommitted")
    assert uncommitted == everything, f"read_uncommitted saw {uncommitted}"

    # An open transaction holds read_committed readers at the LSO.
    p.begin_transaction()
    p.produce(topic, value="open", partition=0)
    p.flush(30)
    assert read_isolated(server, topic, partitions, "read_committed") == expected, "an open transaction was read"

    # A new instance with the same transactional.id aborts the open transaction and fences
    # the old one.
    zombie = p
    successor = producer("orders-writer")
    try:
        zombie.commit_transaction(30)
        raise AssertionError("the fenced producer committed")
    except KafkaException as e:
        err = e.args[0]
        assert err.fatal() or err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                                             KafkaError.INVALID_PRODUCER_EPOCH), f"zombie commit: {err}"
    successor.begin_transaction()
    successor.produce(topic, value="after-fence", partition=0)
    successor.commit_transaction(30)
    expected[0].append("after-fence")
    assert read_isolated(server, topic, partitions, "read_committed") == expected, "after the fence"
    print(f"  transactions: {sum(len(v) for v in expected.values())} committed records read once; zombie fenced")


def scenario_exactly_once(server):
    """A consume-transform-produce loop with send_offsets_to_transaction over 100,000 records,
    a broker killed midway and started again: the output, read_committed, holds every input
    record exactly once."""
    source, sink, partitions, total = "eos-in", "eos-out", 6, 100_000
    create_topic(server, source, partitions, 3, {"min.insync.replicas": "2"})
    create_topic(server, sink, partitions, 3, {"min.insync.replicas": "2"})
    feeder = Producer({"bootstrap.servers": server.bootstrap, "enable.idempotence": True, "linger.ms": 20})
    for i in range(total):
        while True:
            try:
                feeder.produce(source, key=str(i), value=str(i))
                break
            except BufferError:
                feeder.poll(0.1)
        feeder.poll(0)
    assert feeder.flush(120) == 0, "the input was not all written"

    group = "eos-transformer"
    consumer = Consumer({
        "bootstrap.servers": server.bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
    })
    consumer.subscribe([source])

    def new_producer():
        p = Producer({
            "bootstrap.servers": server.bootstrap,
            "transactional.id": "eos-transformer-1",
            "transaction.timeout.ms": 60_000,
        })
        p.init_transactions(60)
        return p

    producer = new_producer()
    done, killed, restarted, aborts, commits = 0, None, False, 0, 0
    deadline = time.time() + 600
    while done < total and time.time() < deadline:
        batch = [m for m in consumer.consume(500, timeout=1) if not m.error()]
        if not batch:
            continue
        try:
            producer.begin_transaction()
            for m in batch:
                producer.produce(sink, key=m.key(), value=b"out-" + m.value())
                producer.poll(0)
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 60)
            for attempt in range(10):
                try:
                    producer.commit_transaction(60)
                    break
                except KafkaException as e:
                    # librdkafka: a retriable commit error is retried by calling commit again.
                    if not e.args[0].retriable() or attempt == 9:
                        raise
            commits += 1
            done += len(batch)
        except KafkaException as e:
            err = e.args[0]
            aborts += 1
            if err.txn_requires_abort():
                producer.abort_transaction(60)
            elif err.fatal():
                producer = new_producer()
            else:
                raise
            # Rewind to the group's committed offsets: the aborted batch is read again.
            committed = consumer.committed(consumer.assignment(), 60)
            for tp in committed:
                consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))
            done = sum(max(tp.offset, 0) for tp in committed)
        if killed is None and done >= total // 2:
            killed = leader_of(server, sink, 0)
            server.command(f"kill {killed}")
            killed_at = time.time()
        if killed is not None and not restarted and time.time() - killed_at > 10:
            server.command(f"start {killed}")
            restarted = True
    assert done >= total, f"transformed {done} of {total} records in time"
    consumer.close()
    if not restarted and killed is not None:
        server.command(f"start {killed}")
    wait_healthy(server)
    out = read_isolated(server, sink, partitions, "read_committed")
    values = [v for vs in out.values() for v in vs]
    assert len(values) == total, f"{len(values)} output records for {total} inputs"
    assert sorted(int(v[4:]) for v in values) == list(range(total)), "an input record is missing or doubled"
    # Per input key, output order follows input order within each partition.
    print(f"  exactly-once: {total} records, {commits} transactions, {aborts} retried, broker {killed} killed midway")


def scenario_kafka_python_txn(server):
    """kafka-python's transactional producer: committed records reach a read_committed
    kafka-python consumer, aborted ones do not."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KTopicPartition

    topic = "py-txn"
    create_topic(server, topic, 2, 3)
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, transactional_id="py-writer")
    producer.init_transactions()
    expected = []
    for round_, outcome in enumerate(["commit", "abort", "commit"]):
        producer.begin_transaction()
        for i in range(20):
            value = f"{outcome}-{round_}-{i}"
            producer.send(topic, value=value.encode(), partition=i % 2)
            if outcome == "commit":
                expected.append(value)
        if outcome == "commit":
            producer.commit_transaction()
        else:
            producer.flush()
            producer.abort_transaction()
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=server.bootstrap,
        isolation_level="read_committed",
        enable_auto_commit=False,
        consumer_timeout_ms=5000,
    )
    tps = [KTopicPartition(topic, p) for p in range(2)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    values = []
    deadline = time.time() + 60
    while len(values) < len(expected) and time.time() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            values.extend(r.value.decode() for r in records)
    extra = consumer.poll(timeout_ms=2000)
    consumer.close()
    assert not any(extra.values()), f"records past the committed ones: {extra}"
    assert sorted(values) == sorted(expected), f"read_committed saw {len(values)} records, expected {len(expected)}"
    print(f"  kafka-python-txn: {len(values)} committed records, aborted ones unseen")


SCENARIOS = {
    "kcat": scenario_kcat,
    "confluent": scenario_confluent,
    "kafka-python": scenario_kafka_python,
    "failover": scenario_failover,
    "garbage": scenario_garbage,
    "kdeck-cli": scenario_kdeck_cli,
    "idempotent-steady": scenario_idempotent_steady,
    "idempotent-chaos": scenario_idempotent_chaos,
    "group-failover": scenario_group_failover,
    "static-member": scenario_static_member,
    "reassign": scenario_reassign,
    "group-offsets": scenario_group_offsets,
    "configs": scenario_configs,
    "log-dirs": scenario_log_dirs,
    "acls": scenario_acls,
    "fetch-sessions": scenario_fetch_sessions,
    "legacy-clients": scenario_legacy_clients,
    "transactions": scenario_transactions,
    "exactly-once": scenario_exactly_once,
    "kafka-python-txn": scenario_kafka_python_txn,
}

# Scenarios that wait for kdeck to catch up, with the reason: run only when named on the
# command line. Remove an entry once its scenario passes.
PENDING: dict[str, str] = {}


def main():
    global KDECK
    KDECK = os.path.abspath(sys.argv[1])
    names = sys.argv[2:]
    if not names:
        names = [n for n in SCENARIOS if n not in PENDING]
        for name, reason in PENDING.items():
            print(f"skip {name}: {reason}")
    failed = []
    for name in names:
        started = time.time()
        server = Server()
        try:
            SCENARIOS[name](server)
            server.stop()
            print(f"ok   {name} ({time.time() - started:.1f}s)")
        except Exception:
            failed.append(name)
            print(f"FAIL {name}: server log in {server.dir}")
            traceback.print_exc()
            if server.alive():
                server.proc.kill()
    if failed:
        print("failed: " + ", ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
